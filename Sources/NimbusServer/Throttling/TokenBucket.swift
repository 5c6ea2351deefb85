/// A token bucket on milliseconds since the epoch: holds up to `capacity` tokens and gains one
/// every `refillMillis`. Sign-in throttling takes one per failure (``take(now:)``); request
/// throttling takes one per request while there is one (``tryTake(now:)``). Pure: the caller
/// says what time it is.
struct TokenBucket: Sendable, Equatable {
    let capacity: Int
    let refillMillis: Double
    private(set) var tokens: Double
    private(set) var updatedAt: Int64

    init(capacity: Int, refillMillis: Int64, now: Int64) {
        self.init(capacity: capacity, refillMillis: Double(refillMillis), now: now)
    }

    /// A full bucket of `capacity` tokens that gains `ratePerSecond` tokens a second.
    init(capacity: Int, ratePerSecond: Double, now: Int64) {
        self.init(capacity: capacity, refillMillis: 1000 / max(ratePerSecond, 0.000_001), now: now)
    }

    private init(capacity: Int, refillMillis: Double, now: Int64) {
        self.capacity = max(capacity, 1)
        self.refillMillis = max(refillMillis, 0.000_001)
        self.tokens = Double(max(capacity, 1))
        self.updatedAt = now
    }

    /// The tokens at `now` (a clock that jumped back refills nothing).
    mutating func refill(now: Int64) {
        guard now > updatedAt else { return }
        tokens = min(Double(capacity), tokens + Double(now - updatedAt) / refillMillis)
        updatedAt = now
    }

    /// Seconds until a token is there, or `nil` when one is there now.
    func retryAfterSeconds(now: Int64) -> Int? {
        var bucket = self
        bucket.refill(now: now)
        guard bucket.tokens < 1 else { return nil }
        let millis = (1 - bucket.tokens) * refillMillis
        return max(1, Int((millis / 1000).rounded(.up)))
    }

    /// Takes a token (down to none).
    mutating func take(now: Int64) {
        refill(now: now)
        tokens = max(0, tokens - 1)
    }

    /// Takes a token if there is one (`nil`); otherwise takes nothing and returns the seconds
    /// until there is one.
    mutating func tryTake(now: Int64) -> Int? {
        refill(now: now)
        if let wait = retryAfterSeconds(now: now) { return wait }
        tokens -= 1
        return nil
    }

    /// Full again: forgetting it loses nothing.
    func isFull(now: Int64) -> Bool {
        var bucket = self
        bucket.refill(now: now)
        return bucket.tokens >= Double(capacity)
    }
}
