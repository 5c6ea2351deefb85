import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// A container environment's public database: its zones, and a zone's records in pages
/// (read with `zones/list` and `records/changes`, as any API client reads them).
enum DataPages {
    static let pageSize = 50

    /// `GET /dashboard/zones?c=…&env=…`.
    static func zones(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let environment = try context.environment()
        let answer = try await context.perform(.zonesList, container: container, environment: environment, body: [:])
        let zones = (answer["zones"]?.array ?? []).compactMap { $0["zoneID"]?["zoneName"]?.string }
        let user = context.userPairs
        return context.render(
            "zones",
            [
                "title": "Zones of \(container)", "container": container, "environment": environment.rawValue,
                "cq": DashboardApp.query([("c", container)]),
                "zones": zones.map { zone in
                    ["zone": zone, "q": DashboardApp.query([("c", container), ("env", environment.rawValue), ("zone", zone)] + user)]
                },
                "newQ": DashboardApp.query([("c", container), ("env", environment.rawValue), ("zone", "_defaultZone")]),
                "otherEnvironment": environment == .development ? "production" : "development",
                "otherQ": DashboardApp.query(
                    [("c", container), ("env", environment == .development ? "production" : "development")] + user),
                "database": context.userArgument.map { "private database of \($0)" } ?? "public database",
                "public": context.userArgument == nil,
            ])
    }

    /// `GET /dashboard/records?c=…&env=…&zone=…&page=SYNC_TOKEN`: a page of the zone's
    /// records in change order, with a link to the next.
    static func records(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let environment = try context.environment()
        let zone = context.argument("zone") ?? "_defaultZone"
        var body: [String: JSON] = ["zoneID": ["zoneName": .string(zone)], "resultsLimit": .int(pageSize)]
        if let page = context.argument("page"), !page.isEmpty { body["syncToken"] = .string(page) }
        let answer = try await context.perform(.recordsChanges, container: container, environment: environment, body: .object(body))
        let records = (answer["records"]?.array ?? []).filter { $0["deleted"]?.bool != true }
        let base: [(String, String)] = [("c", container), ("env", environment.rawValue), ("zone", zone)] + context.userPairs
        var next: String?
        if answer["moreComing"]?.bool == true, let token = answer["syncToken"]?.string {
            next = DashboardApp.query(base + [("page", token)])
        }
        return context.render(
            "records",
            [
                "title": "\(zone) · \(container)", "container": container, "environment": environment.rawValue, "zone": zone,
                "zonesQ": DashboardApp.query([("c", container), ("env", environment.rawValue)] + context.userPairs),
                "database": context.userArgument.map { "private database of \($0)" } ?? "public database",
                "public": context.userArgument == nil,
                "newQ": DashboardApp.query(base),
                "first": DashboardApp.query(base), "next": next as Any, "paged": context.argument("page") != nil,
                "records": records.map { record in
                    let name = record["recordName"]?.string ?? ""
                    let fields = (record["fields"]?.object ?? [:]).keys.sorted()
                    return [
                        "name": name, "type": record["recordType"]?.string ?? "",
                        "q": PageContext.recordQuery(
                            container: container, environment: environment, zone: zone, record: name, user: context.userPairs),
                        "modified": record["modified"]?["timestamp"]?.int64.map(Format.date) ?? "",
                        "fields": fields.joined(separator: ", "),
                    ] as [String: Any]
                },
                "none": records.isEmpty,
            ])
    }
}
