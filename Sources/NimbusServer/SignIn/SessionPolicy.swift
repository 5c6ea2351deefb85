/// When a session has expired and when its "last seen" is worth writing: the decisions of
/// ``SignInSettings/sessionIdle`` and ``SignInSettings/lastSeenGranularity``, on
/// milliseconds since the epoch.
struct SessionPolicy: Sendable, Equatable {
    var idleMillis: Int64
    var touchMillis: Int64

    init(_ settings: SignInSettings) {
        idleMillis = settings.sessionIdle.milliseconds
        touchMillis = settings.lastSeenGranularity.milliseconds
    }

    /// Unused for longer than the idle time.
    func isExpired(lastSeenAt: Int64, now: Int64) -> Bool { now - lastSeenAt > idleMillis }

    /// Seen long enough ago that this use is worth recording.
    func needsTouch(lastSeenAt: Int64, now: Int64) -> Bool { now - lastSeenAt >= touchMillis }

    /// The oldest "last seen" of a session that has not expired at `now`.
    func liveSince(now: Int64) -> Int64 { now - idleMillis }

    /// The idle time in whole days, for messages.
    var idleDays: Int64 { max(1, idleMillis / 86_400_000) }
}
