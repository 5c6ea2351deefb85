import ArgumentParser
import NimbusServer
import NimbusStore

/// `nimbus serve`'s throttling flags: the server-wide defaults of the request limits
/// (each container may set its own with `nimbus container throttle`) and the in-flight caps.
struct ThrottleOptions: ParsableArguments {
    @Flag(name: .long, help: "Turn request throttling off (rate limits and in-flight caps; sign-in throttling stays).")
    var noThrottle = false
    @Option(name: .long, help: "Default requests/s per signed-in user (0: no limit).")
    var throttleUserRate = ThrottleLimits.serverDefaults.userRate ?? 0
    @Option(name: .long, help: "Default burst per signed-in user.")
    var throttleUserBurst = ThrottleLimits.serverDefaults.userBurst ?? 1
    @Option(name: .long, help: "Default requests/s per API token or server-to-server key (0: no limit).")
    var throttleTokenRate = ThrottleLimits.serverDefaults.tokenRate ?? 0
    @Option(name: .long, help: "Default burst per API token or key.")
    var throttleTokenBurst = ThrottleLimits.serverDefaults.tokenBurst ?? 1
    @Option(name: .long, help: "Default requests/s per client address (0: no limit).")
    var throttleAddressRate = ThrottleLimits.serverDefaults.addressRate ?? 0
    @Option(name: .long, help: "Default burst per client address.")
    var throttleAddressBurst = ThrottleLimits.serverDefaults.addressBurst ?? 1
    @Option(name: .long, help: "Requests of one user the server runs at once; more wait their turn (0: no cap).")
    var throttleUserInFlight = ThrottleSettings().userInFlight
    @Option(
        name: .long,
        help: "Requests of one user the server runs at once while other users' requests share it (0: the user cap throughout).")
    var throttleContendedUserInFlight = ThrottleSettings().contendedUserInFlight
    @Option(
        name: .long,
        help: ArgumentHelp(
            "While other users' requests share the server, a user with requests waiting rests before each next one for this share of the last one's running time (0: no rest).",
            valueName: "share"))
    var throttleContendedRest = ThrottleSettings().contendedRest
    @Flag(
        inversion: .prefixedNo,
        help: "While other users' requests share the server, run the requests a user had waiting at the lowest CPU priority.")
    var throttleBackgroundLane = ThrottleSettings().backgroundLane
    @Option(
        name: .long,
        help: ArgumentHelp(
            "In the background lane, a non-atomic batch of saves commits in transactions of at most this many records (0: whole batches).",
            valueName: "records"))
    var throttleBackgroundTransactionRecords = ThrottleSettings().backgroundTransactionRecords
    @Option(name: .long, help: "Requests from one address the server runs at once; more wait their turn (0: no cap).")
    var throttleAddressInFlight = ThrottleSettings().addressInFlight

    func validate() throws { _ = try settings() }

    /// The flags, checked.
    func settings() throws -> ThrottleSettings {
        var settings = ThrottleSettings()
        settings.enabled = !noThrottle
        settings.defaults = ThrottleLimits(
            userRate: throttleUserRate, userBurst: throttleUserBurst, tokenRate: throttleTokenRate,
            tokenBurst: throttleTokenBurst, addressRate: throttleAddressRate, addressBurst: throttleAddressBurst)
        if let problem = settings.defaults.problem { throw ValidationError(problem) }
        guard throttleUserInFlight >= 0, throttleAddressInFlight >= 0, throttleContendedUserInFlight >= 0 else {
            throw ValidationError(
                "--throttle-user-in-flight, --throttle-contended-user-in-flight and --throttle-address-in-flight "
                    + "must be 0 (no cap) or more")
        }
        settings.userInFlight = throttleUserInFlight
        settings.contendedUserInFlight = throttleContendedUserInFlight
        guard throttleContendedRest >= 0, throttleContendedRest <= 10 else {
            throw ValidationError("--throttle-contended-rest must be from 0 (no rest) to 10")
        }
        settings.contendedRest = throttleContendedRest
        settings.backgroundLane = throttleBackgroundLane
        guard throttleBackgroundTransactionRecords >= 0 else {
            throw ValidationError("--throttle-background-transaction-records must be 0 (whole batches) or more")
        }
        settings.backgroundTransactionRecords = throttleBackgroundTransactionRecords
        settings.addressInFlight = throttleAddressInFlight
        return settings
    }
}
