import ArgumentParser
import NimbusProtocol
import NimbusStore

/// What `nimbus user show` and `nimbus container show` print about a database: the usage
/// counter (``DatabaseUsage``) beside the quota the operator says the server runs with.
struct UsageReport {
    /// What the line names, e.g. "private database (development)".
    var label: String
    var usage: DatabaseUsage
    /// The quota given on the command line, if any.
    var quota: Int64?

    var json: JSON {
        var members: [String: JSON] = [
            "recordBytes": .int(usage.recordBytes), "assetBytes": .int(usage.assetBytes), "totalBytes": .int(usage.totalBytes),
        ]
        if let quota {
            members["quotaBytes"] = .int(quota)
            members["remainingBytes"] = .int(max(0, quota - usage.totalBytes))
        }
        return .object(members)
    }

    /// One line; `quotaFlag` names the option that gives the quota.
    func text(quotaFlag: String) -> String {
        let bytes = "\(label): \(usage.totalBytes) bytes (records \(usage.recordBytes), assets \(usage.assetBytes))"
        guard let quota else { return bytes + "; quota not given (pass \(quotaFlag) as the server has it)" }
        let over = usage.totalBytes > quota ? ", over quota: only deletes and shrinking edits succeed" : ""
        return bytes + "; quota \(quota) bytes, \(max(0, quota - usage.totalBytes)) left\(over)"
    }

    /// The reports of one owner's databases of `scope` in both environments of `container`.
    static func databases(
        _ store: any NimbusStorage, container: String, scope: DatabaseScope, owner: String, quota: Int64?
    ) async throws -> [(environment: ContainerEnvironment, report: UsageReport)] {
        var reports: [(ContainerEnvironment, UsageReport)] = []
        for environment in [ContainerEnvironment.development, .production] {
            let key = DatabaseKey(container: container, environment: environment, scope: scope, owner: owner)
            let usage = try await store.usage(of: key)
            reports.append(
                (environment, UsageReport(label: "\(scope.rawValue) database (\(environment.rawValue))", usage: usage, quota: quota)))
        }
        return reports
    }

    /// A quota option's value, checked.
    static func validate(_ quota: Int64?, flag: String) throws {
        if let quota, quota <= 0 { throw ValidationError("\(flag) must be positive, got \(quota)") }
    }
}
