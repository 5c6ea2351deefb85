/// A token bucket on milliseconds since the epoch: holds up to `capacity` tokens, gains one
/// every `refillMillis`, and each failure takes one. Pure: the caller says what time it is.
struct TokenBucket: Sendable, Equatable {
    let capacity: Int
    let refillMillis: Int64
    private(set) var tokens: Double
    private(set) var updatedAt: Int64

    init(capacity: Int, refillMillis: Int64, now: Int64) {
        self.capacity = max(capacity, 1)
        self.refillMillis = max(refillMillis, 1)
        self.tokens = Double(max(capacity, 1))
        self.updatedAt = now
    }

    /// The tokens at `now` (a clock that jumped back refills nothing).
    mutating func refill(now: Int64) {
        guard now > updatedAt else { return }
        tokens = min(Double(capacity), tokens + Double(now - updatedAt) / Double(refillMillis))
        updatedAt = now
    }

    /// Seconds until a token is there, or `nil` when one is there now.
    func retryAfterSeconds(now: Int64) -> Int? {
        var bucket = self
        bucket.refill(now: now)
        guard bucket.tokens < 1 else { return nil }
        let millis = (1 - bucket.tokens) * Double(refillMillis)
        return max(1, Int((millis / 1000).rounded(.up)))
    }

    /// Takes a token (down to none).
    mutating func take(now: Int64) {
        refill(now: now)
        tokens = max(0, tokens - 1)
    }

    /// Full again: forgetting it loses nothing.
    func isFull(now: Int64) -> Bool {
        var bucket = self
        bucket.refill(now: now)
        return bucket.tokens >= Double(capacity)
    }
}
