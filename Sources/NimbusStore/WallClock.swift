import Foundation
import NIOConcurrencyHelpers

/// Where the server and its stores read the time of day: the one seam for the wall clock.
///
/// Everything Nimbus stamps or compares with the time of day goes through a `WallClock`:
/// records' `created` and `modified` timestamps, when zones were deleted and tokens issued or
/// revoked, how old a tombstone or a notification is at compaction, and the date window of a
/// server-to-server signature. Production uses ``system``; tests inject a
/// ``ManualWallClock`` and move time themselves instead of waiting for it.
///
/// Timers of I/O (request timeouts, push heartbeats) measure intervals on monotonic clocks
/// and do not go through here.
///
/// ```swift
/// let clock = ManualWallClock(millis: 1_700_000_000_000)
/// let store = try SQLiteStore(directory: dir, clock: clock.wallClock)
/// clock.advance(by: .seconds(31 * 24 * 3600))   // a month later, at once
/// ```
public struct WallClock: Sendable {
    private let read: @Sendable () -> Int64

    /// A clock that reads the time from `millisecondsSinceEpoch`.
    public init(millisecondsSinceEpoch: @escaping @Sendable () -> Int64) {
        self.read = millisecondsSinceEpoch
    }

    /// Milliseconds since 1970-01-01T00:00:00Z.
    public func nowMillis() -> Int64 { read() }

    /// The current time as a `Date`.
    public func now() -> Date { Date(timeIntervalSince1970: Double(nowMillis()) / 1000) }

    /// The system's wall clock (`Date()`), rounded to the millisecond.
    public static let system = WallClock { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    /// A clock that always reads `millis`.
    public static func fixed(millis: Int64) -> WallClock { WallClock { millis } }
}

/// A wall clock whose time the owner sets and advances: what tests inject to make a month
/// pass at once or to stamp data with a known instant. Its time moves only when told to.
public final class ManualWallClock: Sendable {
    private let millis: NIOLockedValueBox<Int64>

    /// A clock reading `millis` (milliseconds since the epoch) until set or advanced.
    public init(millis: Int64) {
        self.millis = NIOLockedValueBox(millis)
    }

    /// The current reading, in milliseconds since the epoch.
    public var nowMillis: Int64 { millis.withLockedValue { $0 } }

    /// Sets the time to `millis` (backwards too: wall clocks can jump).
    public func set(millis newValue: Int64) {
        millis.withLockedValue { $0 = newValue }
    }

    /// Moves the time forward by `duration` (backward for a negative one), to the millisecond.
    public func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let step = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        millis.withLockedValue { $0 += step }
    }

    /// This clock as the ``WallClock`` that servers and stores take: it reads whatever this
    /// object holds at the moment of each reading.
    public var wallClock: WallClock {
        let millis = self.millis
        return WallClock { millis.withLockedValue { $0 } }
    }
}
