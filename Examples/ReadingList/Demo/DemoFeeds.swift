import NIOConcurrencyHelpers
import ReadingList

/// The devices' current push feeds (replaced when B goes offline and comes back).
final class DemoFeeds: Sendable {
    private let feeds = NIOLockedValueBox<(a: PushFeed?, b: PushFeed?)>((nil, nil))

    var a: PushFeed? {
        get { feeds.withLockedValue { $0.a } }
        set { feeds.withLockedValue { $0.a = newValue } }
    }
    var b: PushFeed? {
        get { feeds.withLockedValue { $0.b } }
        set { feeds.withLockedValue { $0.b = newValue } }
    }
}
