import Foundation

/// The device's one clock: how the sync side waits, reads the time and draws random numbers.
///
/// Give it to the store (``LocalStore/init(path:clock:)``); the store stamps the outbox, the
/// conflict log and the quarantine with its time, and every ``SyncEngine`` over the store
/// uses it between retries of a failed request (the server's `retryAfter`, or backoff with
/// jitter) and for the times ``SyncDiagnostics`` reports. Tests inject one that waits for
/// nothing, or whose time they move.
public struct SyncClock: Sendable {
    /// Waits; must throw when the task is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void
    /// A number in `0..<1`, for the jitter of retry waits.
    public var random: @Sendable () -> Double
    /// The time now: when fetches and sends ended, ages of pending changes, backoffs.
    public var now: @Sendable () -> Date

    public init(
        sleep: @escaping @Sendable (Duration) async throws -> Void,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.sleep = sleep
        self.random = random
        self.now = now
    }

    /// Real waits (`Task.sleep`) and system randomness.
    public static let system = SyncClock(sleep: { try await Task.sleep(for: $0) })
}
