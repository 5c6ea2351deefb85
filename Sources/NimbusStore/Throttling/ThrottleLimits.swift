import NimbusProtocol

/// The request rates a container environment allows, each as a token bucket: a sustained
/// rate (requests per second) and a burst (requests at once after a quiet spell).
///
/// In a container's stored settings (`nimbus container throttle`) a `nil` member means "the
/// server's default" (`nimbus serve --throttle-*`); a rate of `0` turns that limit off.
///
/// ```swift
/// var limits = ThrottleLimits()
/// limits.userRate = 20          // 20 requests/s per signed-in user
/// limits.userBurst = 100
/// try await store.setThrottleLimits(limits, container: "iCloud.com.example.app", environment: .production)
/// let effective = limits.filled(from: ThrottleLimits.serverDefaults)
/// ```
public struct ThrottleLimits: Sendable, Equatable {
    /// Requests per second one signed-in user may make (`0`: no limit).
    public var userRate: Double?
    /// Requests one signed-in user may make at once before the rate applies.
    public var userBurst: Int?
    /// Requests per second one API token or server-to-server key may make (`0`: no limit).
    public var tokenRate: Double?
    public var tokenBurst: Int?
    /// Requests per second one client address may make (`0`: no limit).
    public var addressRate: Double?
    public var addressBurst: Int?

    public init(
        userRate: Double? = nil, userBurst: Int? = nil, tokenRate: Double? = nil, tokenBurst: Int? = nil,
        addressRate: Double? = nil, addressBurst: Int? = nil
    ) {
        self.userRate = userRate
        self.userBurst = userBurst
        self.tokenRate = tokenRate
        self.tokenBurst = tokenBurst
        self.addressRate = addressRate
        self.addressBurst = addressBurst
    }

    /// The defaults of a server started without `--throttle-*` flags: chosen far above the
    /// request rates of one benchmark client (docs/THROTTLING.md), so that only a runaway
    /// client meets them.
    public static let serverDefaults = ThrottleLimits(
        userRate: 5_000, userBurst: 10_000, tokenRate: 20_000, tokenBurst: 40_000, addressRate: 10_000,
        addressBurst: 20_000)

    /// No member set: the container uses the server's defaults throughout.
    public var isEmpty: Bool { self == ThrottleLimits() }

    /// These limits, with each member not set taken from `defaults`.
    public func filled(from defaults: ThrottleLimits) -> ThrottleLimits {
        ThrottleLimits(
            userRate: userRate ?? defaults.userRate, userBurst: userBurst ?? defaults.userBurst,
            tokenRate: tokenRate ?? defaults.tokenRate, tokenBurst: tokenBurst ?? defaults.tokenBurst,
            addressRate: addressRate ?? defaults.addressRate, addressBurst: addressBurst ?? defaults.addressBurst)
    }

    /// Why these limits cannot be stored, or `nil` when they can: rates are finite and not
    /// negative, bursts at least 1.
    public var problem: String? {
        for (name, rate) in [("user rate", userRate), ("token rate", tokenRate), ("address rate", addressRate)] {
            if let rate, !(rate.isFinite && rate >= 0) { return "the \(name) must be 0 (no limit) or more, got \(rate)" }
        }
        for (name, burst) in [("user burst", userBurst), ("token burst", tokenBurst), ("address burst", addressBurst)] {
            if let burst, burst < 1 { return "the \(name) must be at least 1, got \(burst)" }
        }
        return nil
    }
}

/// Where each container environment's ``ThrottleLimits`` are kept (SQLite schema v12,
/// PostgreSQL migration 14), so that every node and the CLI see the same settings.
public protocol ThrottleStore: Sendable {
    /// The limits stored for a container environment (empty: the server's defaults). Fails
    /// with an ``AccountError`` for an unknown container.
    func throttleLimits(container: String, environment: ContainerEnvironment) async throws -> ThrottleLimits
    /// Stores the limits of a container environment; empty limits remove its settings. Fails
    /// with an ``AccountError`` for an unknown container or limits with a ``ThrottleLimits/problem``.
    func setThrottleLimits(_ limits: ThrottleLimits, container: String, environment: ContainerEnvironment) async throws
}
