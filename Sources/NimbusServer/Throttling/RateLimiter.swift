import NIOConcurrencyHelpers

/// Token buckets by key (a user, a token, an address), in bounded memory whatever keys
/// clients send: past `maxKeys`, full buckets are forgotten (they lose nothing), then the
/// least recently used half of the rest.
final class RateLimiter: Sendable {
    private let buckets: NIOLockedValueBox<[String: TokenBucket]>
    /// The most buckets held at once.
    let maxKeys: Int

    init(maxKeys: Int) {
        self.maxKeys = max(maxKeys, 2)
        self.buckets = NIOLockedValueBox([:])
    }

    /// Takes a token from `key`'s bucket (`rate` requests a second, `burst` at most): `nil`
    /// when there was one, otherwise the seconds until there is one. A rate of 0 admits all.
    func take(_ key: String, rate: Double, burst: Int, now: Int64) -> Int? {
        guard rate > 0 else { return nil }
        let maxKeys = self.maxKeys
        return buckets.withLockedValue { buckets in
            let fresh = TokenBucket(capacity: burst, ratePerSecond: rate, now: now)
            var bucket: TokenBucket
            if let existing = buckets[key],
                existing.capacity == fresh.capacity, existing.refillMillis == fresh.refillMillis
            {
                bucket = existing
            } else {
                // New, or its limits changed (`nimbus container throttle`): a full bucket under them.
                if buckets[key] == nil, buckets.count >= maxKeys { Self.evict(&buckets, maxKeys: maxKeys, now: now) }
                bucket = fresh
            }
            let wait = bucket.tryTake(now: now)
            buckets[key] = bucket
            return wait
        }
    }

    /// The buckets held now.
    var count: Int { buckets.withLockedValue { $0.count } }

    /// Forgets full buckets, then, if that is not enough, the least recently used half:
    /// O(n log n) once every n/2 new keys.
    private static func evict(_ buckets: inout [String: TokenBucket], maxKeys: Int, now: Int64) {
        buckets = buckets.filter { !$0.value.isFull(now: now) }
        guard buckets.count >= maxKeys / 2 else { return }
        let keep = buckets.sorted { $0.value.updatedAt > $1.value.updatedAt }.prefix(maxKeys / 2)
        buckets = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
    }
}
