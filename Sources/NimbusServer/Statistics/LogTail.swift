import Foundation
import Logging
import NIOConcurrencyHelpers

/// The last lines a server logged, kept in memory for the dashboard's live page. Add its
/// ``handler(label:)`` beside the usual handler with swift-log's `MultiplexLogHandler`.
///
/// ```swift
/// let tail = LogTail()
/// let logger = Logger(label: "nimbus") { label in
///     MultiplexLogHandler([StreamLogHandler.standardError(label: label), tail.handler(label: label)])
/// }
/// ```
public final class LogTail: Sendable {
    /// How many lines are kept.
    public let capacity: Int
    private let lines: NIOLockedValueBox<[String]>
    /// The time a line is stamped with: the system clock by default, a fixed one in tests.
    let now: @Sendable () -> Date

    /// A tail that keeps the last `capacity` lines (and, between trims, up to twice as many).
    public init(capacity: Int = 200, now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
        self.capacity = max(capacity, 1)
        self.lines = NIOLockedValueBox([])
    }

    /// The kept lines, oldest first.
    public var recentLines: [String] { lines.withLockedValue { $0 } }

    func append(_ line: String) {
        lines.withLockedValue { lines in
            lines.append(line)
            if lines.count > capacity * 2 { lines.removeFirst(lines.count - capacity) }
        }
    }

    /// A log handler writing into this tail.
    public func handler(label: String) -> any LogHandler {
        Handler(label: label, tail: self)
    }

    struct Handler: LogHandler {
        let label: String
        let tail: LogTail
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            // Secrets redacted, as on standard error (``LogRedaction``).
            tail.append(
                String(
                    ServerLogHandler.render(
                        format: .text, time: tail.now(), level: event.level, label: label, message: "\(event.message)",
                        metadata: all
                    ).dropLast()))
        }
    }
}
