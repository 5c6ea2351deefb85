import ArgumentParser
import NimbusProtocol
import NimbusStore

extension ContainerCommand {
    /// `nimbus container throttle`: a container environment's request limits (docs/THROTTLING.md).
    struct Throttle: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show or set a container's request limits (token buckets per user, API token and address).",
            discussion: """
                Rates are requests per second, bursts requests at once; 0 as a rate turns that limit off. \
                Options not given keep their value; a value never set is the server's default \
                (nimbus serve --throttle-*). Without --env both environments change. Running servers \
                apply a change within 5 seconds, without a restart. --reset goes back to the server's defaults.
                """)

        @Argument(help: "The container identifier, e.g. iCloud.com.example.app") var container: String
        @Option(name: .customLong("env"), help: "development or production (default: both).") var environment: String?
        @Option(name: .long, help: "Requests per second one signed-in user may make.") var userRate: Double?
        @Option(name: .long, help: "Requests one signed-in user may make at once after a quiet spell.") var userBurst: Int?
        @Option(name: .long, help: "Requests per second one API token or server-to-server key may make.")
        var tokenRate: Double?
        @Option(name: .long, help: "Requests one API token or key may make at once.") var tokenBurst: Int?
        @Option(name: .long, help: "Requests per second one client address may make.") var addressRate: Double?
        @Option(name: .long, help: "Requests one client address may make at once.") var addressBurst: Int?
        @Flag(name: .long, help: "Only print the limits.") var show = false
        @Flag(name: .long, help: "Remove the container's limits: the server's defaults apply.") var reset = false
        @OptionGroup var data: DataOptions
        @OptionGroup var output: OutputOptions

        private var changes: ThrottleLimits {
            ThrottleLimits(
                userRate: userRate, userBurst: userBurst, tokenRate: tokenRate, tokenBurst: tokenBurst,
                addressRate: addressRate, addressBurst: addressBurst)
        }

        func validate() throws {
            if environment != nil, environments == nil {
                throw ValidationError("--env must be development or production, got '\(environment ?? "")'")
            }
            if show, reset || !changes.isEmpty { throw ValidationError("--show takes no other option") }
            if reset, !changes.isEmpty { throw ValidationError("--reset takes no limit: give either") }
            if let problem = changes.problem { throw ValidationError(problem) }
        }

        private var environments: [ContainerEnvironment]? {
            guard let environment else { return ContainerEnvironment.allCases }
            return ContainerEnvironment(rawValue: environment).map { [$0] }
        }

        func run() async throws {
            let changes = self.changes
            let modify = !show
            let results = try await withStore(data) { store in
                var results: [(ContainerEnvironment, ThrottleLimits)] = []
                for environment in environments ?? [] {
                    var limits = ThrottleLimits()
                    if !reset { limits = try await store.throttleLimits(container: container, environment: environment) }
                    if modify {
                        limits = changes.filled(from: limits)
                        try await store.setThrottleLimits(limits, container: container, environment: environment)
                    }
                    results.append((environment, limits))
                }
                return results
            }
            var json: [String: JSON] = ["container": .string(container)]
            var text = "container \(container)"
            for (environment, limits) in results {
                json[environment.rawValue] = Self.json(limits)
                text += "\n\(environment.rawValue):\n" + Self.text(limits)
            }
            emit(output, json: .object(json), text: text)
        }

        static func json(_ limits: ThrottleLimits) -> JSON {
            var members: [String: JSON] = [:]
            if let value = limits.userRate { members["userRate"] = .double(value) }
            if let value = limits.userBurst { members["userBurst"] = .int(Int64(value)) }
            if let value = limits.tokenRate { members["tokenRate"] = .double(value) }
            if let value = limits.tokenBurst { members["tokenBurst"] = .int(Int64(value)) }
            if let value = limits.addressRate { members["addressRate"] = .double(value) }
            if let value = limits.addressBurst { members["addressBurst"] = .int(Int64(value)) }
            return .object(members)
        }

        static func text(_ limits: ThrottleLimits) -> String {
            func rate(_ value: Double?) -> String {
                guard let value else { return "server default" }
                return value == 0 ? "no limit" : "\(value.throttleText) /s"
            }
            func burst(_ value: Int?) -> String { value.map(String.init) ?? "server default" }
            return """
                  per user:    rate \(rate(limits.userRate)), burst \(burst(limits.userBurst))
                  per token:   rate \(rate(limits.tokenRate)), burst \(burst(limits.tokenBurst))
                  per address: rate \(rate(limits.addressRate)), burst \(burst(limits.addressBurst))
                """
        }
    }
}

extension Double {
    /// `20` rather than `20.0`; `0.5` as it is.
    fileprivate var throttleText: String { self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self) }
}
