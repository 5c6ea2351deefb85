import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The query builder: record type, filters with every comparator, sort, `desiredKeys` and a
/// limit, run through `records/query` and shown as the curl command that sends the same body.
enum QueryPage {
    static let filterRows = 3

    /// `GET /dashboard/query?c=…&env=…[&recordType=…&ff0=…&fc0=…&fv0=…&ft0=…&sort=…&order=…&desiredKeys=…]`.
    static func show(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let environment = try context.environment()
        let zone = context.argument("zone").flatMap { $0.isEmpty ? nil : $0 } ?? "_defaultZone"
        let recordType = context.argument("recordType") ?? ""
        let schema = try await context.app.store.schema(container: container, environment: environment).schema
        var rows: [[String: Any]] = []
        for index in 0..<filterRows {
            let comparator = context.argument("fc\(index)") ?? "EQUALS"
            let type = context.argument("ft\(index)") ?? "STRING"
            rows.append([
                "i": index, "field": context.argument("ff\(index)") ?? "", "value": context.argument("fv\(index)") ?? "",
                "distance": context.argument("fd\(index)") ?? "",
                "comparators": QueryFilter.Comparator.allCases.map { ["name": $0.rawValue, "selected": $0.rawValue == comparator] as [String: Any] },
                "types": (["STRING", "INT64", "DOUBLE", "TIMESTAMP", "REFERENCE", "LOCATION"] + ["STRING_LIST", "INT64_LIST"])
                    .map { ["name": $0, "selected": $0 == type] as [String: Any] },
            ])
        }
        var values: [String: Any] = [
            "title": "Query · \(container)", "container": container, "environment": environment.rawValue, "zone": zone,
            "cq": DashboardApp.query([("c", container)]),
            "recordType": recordType, "recordTypes": schema.recordTypes.keys.sorted(), "rows": rows,
            "sort": context.argument("sort") ?? "", "descending": context.argument("order") == "desc",
            "desiredKeys": context.argument("desiredKeys") ?? "", "limit": context.argument("limit") ?? "20",
        ]
        guard !recordType.isEmpty else { return context.render("query", values) }
        let body = try body(context, recordType: recordType, zone: zone)
        values["curl"] = Curl.command(
            origin: context.origin, container: container, environment: environment, operation: "records/query", body: body)
        do {
            let answer = try await context.perform(.recordsQuery, container: container, environment: environment, body: body)
            let records = answer["records"]?.array ?? []
            values["ran"] = true
            values["count"] = records.count
            values["results"] = records.map { record in
                let name = record["recordName"]?.string ?? ""
                let fields = (FieldDisplay.redactingEncrypted(record)["fields"]?.object ?? [:]).sorted { $0.key < $1.key }
                    .map { key, field in "\(key) = \((field["value"] ?? .null).serialized())" }
                return [
                    "name": name, "type": record["recordType"]?.string ?? "", "fields": fields,
                    "q": PageContext.recordQuery(container: container, environment: environment, zone: zone, record: name),
                ] as [String: Any]
            }
            values["more"] = answer["continuationMarker"]?.string != nil
        } catch let error as CloudKitError {
            values["queryError"] = "\(error.code.rawValue): \(error.reason)"
        }
        return context.render("query", values)
    }

    /// The `records/query` body the form describes.
    static func body(_ context: PageContext, recordType: String, zone: String) throws -> JSON {
        var filters: [JSON] = []
        for index in 0..<filterRows {
            guard let field = context.argument("ff\(index)")?.trimmingCharacters(in: .whitespaces), !field.isEmpty else { continue }
            let comparator = context.argument("fc\(index)") ?? "EQUALS"
            guard let parsed = QueryFilter.Comparator(rawValue: comparator) else {
                throw DashboardError(status: .badRequest, title: "Bad filter", message: "Unknown comparator \(comparator).")
            }
            var type = context.argument("ft\(index)") ?? "STRING"
            let text = context.argument("fv\(index)") ?? ""
            let value: JSON
            if parsed.takesList && !type.hasSuffix("_LIST") {
                // A list of values of the type: the text is a JSON array.
                type += "_LIST"
            }
            value = try FieldDisplay.wireValue(text, type: type, field: field)
            var filter: [String: JSON] = [
                "comparator": .string(comparator), "fieldName": .string(field),
                "fieldValue": ["value": value, "type": .string(type)],
            ]
            if let distance = context.argument("fd\(index)"), let meters = Double(distance) { filter["distance"] = .double(meters) }
            filters.append(.object(filter))
        }
        var query: [String: JSON] = ["recordType": .string(recordType)]
        if !filters.isEmpty { query["filterBy"] = .array(filters) }
        if let sort = context.argument("sort")?.trimmingCharacters(in: .whitespaces), !sort.isEmpty {
            query["sortBy"] = [["fieldName": .string(sort), "ascending": .bool(context.argument("order") != "desc")]]
        }
        var body: [String: JSON] = ["query": .object(query), "zoneID": ["zoneName": .string(zone)]]
        if let limit = context.argument("limit").flatMap({ Int64($0) }) { body["resultsLimit"] = .int(limit) }
        let keys = (context.argument("desiredKeys") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        if !keys.isEmpty { body["desiredKeys"] = .array(keys.map(JSON.string)) }
        return .object(body)
    }
}
