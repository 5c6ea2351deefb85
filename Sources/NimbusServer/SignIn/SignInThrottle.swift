import NimbusProtocol
import NimbusStore

/// Throttles failed sign-ins: one token bucket per account (the address signed in with,
/// known or not, so that throttling tells nothing about which exist) and one per client
/// address. A sign-in is refused with THROTTLED while either bucket is empty; each failure
/// takes a token from both.
package actor SignInThrottle {
    private let settings: SignInSettings
    private let clock: WallClock
    private var accounts: [String: TokenBucket] = [:]
    private var addresses: [String: TokenBucket] = [:]
    /// Past this many buckets, full ones are forgotten.
    private let pruneThreshold = 10_000

    package init(settings: SignInSettings, clock: WallClock) {
        self.settings = settings
        self.clock = clock
    }

    /// THROTTLED, with `retryAfter`, when the account or the address has no attempt left.
    package func check(account: String, address: String?) throws(CloudKitError) {
        let now = clock.nowMillis()
        let waits = [accounts[account]?.retryAfterSeconds(now: now), address.flatMap { addresses[$0] }?.retryAfterSeconds(now: now)]
        guard let wait = waits.compactMap({ $0 }).max() else { return }
        throw CloudKitError(
            .throttled, "too many failed sign-ins for this account or from this address; try again in \(wait) s",
            retryAfter: wait)
    }

    /// Counts a failed sign-in against the account and the address.
    package func recordFailure(account: String, address: String?) {
        let now = clock.nowMillis()
        accounts[account, default: bucket(settings.accountBurst, settings.accountRefill, now)].take(now: now)
        if let address {
            addresses[address, default: bucket(settings.addressBurst, settings.addressRefill, now)].take(now: now)
        }
        if accounts.count + addresses.count > pruneThreshold {
            accounts = accounts.filter { !$0.value.isFull(now: now) }
            addresses = addresses.filter { !$0.value.isFull(now: now) }
        }
    }

    private func bucket(_ burst: Int, _ refill: Duration, _ now: Int64) -> TokenBucket {
        TokenBucket(capacity: burst, refillMillis: refill.milliseconds, now: now)
    }
}
