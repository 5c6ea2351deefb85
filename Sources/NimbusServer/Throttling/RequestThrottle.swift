import NIOConcurrencyHelpers
import NimbusProtocol
import NimbusStore

/// Throttles the requests of the CloudKit API and of asset transfers: a token bucket per
/// client address (checked before authentication), per signed-in user and per API token or
/// server-to-server key (checked right after), with each container environment's limits
/// (``ThrottleLimits``, read from the store and kept for ``ThrottleSettings/settingsRefresh``);
/// then a cap on the requests of one user and one address that run at once
/// (``InFlightLimiter``).
///
/// Over a limit the request fails with THROTTLED (HTTP 429) and `retryAfter`. Buckets live in
/// this node's memory: with several nodes, each allows the full rate (docs/THROTTLING.md).
package final class RequestThrottle: Sendable {
    private let settings: ThrottleSettings
    private let store: any ThrottleStore
    private let clock: WallClock
    private let users: RateLimiter
    private let tokens: RateLimiter
    private let addresses: RateLimiter
    private let userSlots: InFlightLimiter
    private let addressSlots = InFlightLimiter()
    private let cache = NIOLockedValueBox([String: (limits: ThrottleLimits, readAt: Int64)]())

    package init(settings: ThrottleSettings, store: any ThrottleStore, clock: WallClock) {
        self.settings = settings
        self.store = store
        self.clock = clock
        users = RateLimiter(maxKeys: settings.maxKeys)
        tokens = RateLimiter(maxKeys: settings.maxKeys)
        addresses = RateLimiter(maxKeys: settings.maxKeys)
        userSlots = InFlightLimiter(
            contention: settings.contendedUserInFlight > 0
                ? .init(
                    limit: settings.contendedUserInFlight, windowMillis: settings.contentionWindow.milliseconds,
                    rest: settings.contendedRest)
                : nil,
            clock: clock)
    }

    /// A place among the requests running: give it back with ``release()`` when the request ends.
    package struct Permit: Sendable {
        fileprivate let throttle: RequestThrottle
        fileprivate let user: String?
        fileprivate let address: String?
        /// Where the request runs: the background lane (its user floods the server beside
        /// others: it waited for one of the places its user has beside them), or `nil` for the
        /// usual executor.
        let lane: BackgroundLane?
        /// In the background lane: the most records one transaction of the request's
        /// non-atomic batch of saves writes (``ThrottleSettings/backgroundTransactionRecords``).
        let transactionRecordLimit: Int?

        package func release() {
            if let address { throttle.addressSlots.release(address) }
            if let user { throttle.userSlots.release(user) }
        }
    }

    /// The address's bucket: THROTTLED when it is empty. Cheap; before authentication.
    package func checkAddress(_ address: String?, container: String, environment: ContainerEnvironment)
        async throws(CloudKitError)
    {
        guard settings.enabled, let address else { return }
        let limits = await limits(container: container, environment: environment)
        try take(
            addresses, "\(container)/\(environment.rawValue)/\(address)", limits.addressRate, limits.addressBurst,
            what: "client address \(address)", setting: "nimbus container throttle --address-rate")
    }

    /// The user's and the token's buckets, then a place among the user's and the address's
    /// running requests (waiting for one if need be).
    package func admit(
        container: String, environment: ContainerEnvironment, user: String?, token: String?, address: String?
    ) async throws -> Permit? {
        guard settings.enabled else { return nil }
        let limits = await limits(container: container, environment: environment)
        let scope = "\(container)/\(environment.rawValue)/"
        if let user {
            try take(users, scope + user, limits.userRate, limits.userBurst, what: "this user", setting: "nimbus container throttle --user-rate")
        }
        if let token {
            try take(
                tokens, scope + token, limits.tokenRate, limits.tokenBurst, what: "this API token or server key",
                setting: "nimbus container throttle --token-rate")
        }
        let userKey = user.map { scope + $0 }
        var lane = InFlightLimiter.Lane.usual
        if let userKey {
            lane = try await userSlots.acquire(
                userKey, limit: settings.userInFlight, maxWaiting: settings.maxWaiting, what: "this user")
        }
        if let address {
            do {
                try await addressSlots.acquire(
                    address, limit: settings.addressInFlight, maxWaiting: settings.maxWaiting,
                    what: "client address \(address)")
            } catch {
                if let userKey { userSlots.release(userKey) }
                throw error
            }
        }
        let background = lane == .background && settings.backgroundLane
        return Permit(
            throttle: self, user: settings.userInFlight > 0 ? userKey : nil,
            address: settings.addressInFlight > 0 ? address : nil,
            lane: background ? BackgroundLane.shared : nil,
            transactionRecordLimit: background && settings.backgroundTransactionRecords > 0
                ? settings.backgroundTransactionRecords : nil)
    }

    /// The address's bucket alone, for asset transfers (whose URLs carry no container
    /// settings): the server's default address limits.
    package func checkTransfer(address: String?) throws(CloudKitError) {
        guard settings.enabled, let address else { return }
        let limits = settings.defaults
        try take(
            addresses, "assets/\(address)", limits.addressRate, limits.addressBurst, what: "client address \(address)",
            setting: "nimbus serve --throttle-address-rate")
    }

    /// Token buckets held in memory now (users, tokens, addresses).
    package var bucketCount: Int { users.count + tokens.count + addresses.count }

    private func take(
        _ limiter: RateLimiter, _ key: String, _ rate: Double?, _ burst: Int?, what: String, setting: String
    ) throws(CloudKitError) {
        guard let rate, rate > 0 else { return }
        let burst = burst ?? max(1, Int(rate))
        guard let wait = limiter.take(key, rate: rate, burst: burst, now: clock.nowMillis()) else { return }
        throw CloudKitError(
            .throttled,
            "\(what) made more than \(burst) requests at once or \(Self.format(rate)) a second, the limit "
                + "(\(setting)); wait \(wait) s (retryAfter) and retry, and send requests at a lower rate",
            retryAfter: wait)
    }

    /// The container environment's limits over the server's defaults, read at most once
    /// every ``ThrottleSettings/settingsRefresh`` (an unknown container: the defaults).
    private func limits(container: String, environment: ContainerEnvironment) async -> ThrottleLimits {
        let key = "\(container)/\(environment.rawValue)"
        let now = clock.nowMillis()
        let refresh = settings.settingsRefresh.milliseconds
        if let cached = cache.withLockedValue({ $0[key] }), now - cached.readAt < refresh, now >= cached.readAt {
            return cached.limits
        }
        guard let stored = try? await store.throttleLimits(container: container, environment: environment) else {
            return settings.defaults
        }
        let limits = stored.filled(from: settings.defaults)
        cache.withLockedValue { cache in
            if cache.count >= 10_000 { cache.removeAll() }  // containers that exist: few
            cache[key] = (limits, now)
        }
        return limits
    }

    private static func format(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : String(rate)
    }
}
