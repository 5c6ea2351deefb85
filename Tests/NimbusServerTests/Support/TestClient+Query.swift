import NimbusProtocol

extension TestClient {
    /// A `records/query` request; `zone: nil` with `zoneWide: true` searches every zone.
    func query(
        _ recordType: String, filters: [JSON] = [], sorts: [JSON] = [], zone: String? = nil, zoneWide: Bool = false,
        limit: Int? = nil, marker: String? = nil, desiredKeys: [String]? = nil, scope: String = "private"
    ) async throws -> Reply {
        var query: [String: JSON] = ["recordType": .string(recordType)]
        if !filters.isEmpty { query["filterBy"] = .array(filters) }
        if !sorts.isEmpty { query["sortBy"] = .array(sorts) }
        var body: [String: JSON] = ["query": .object(query)]
        if let zone { body["zoneID"] = ["zoneName": .string(zone)] }
        if zoneWide { body["zoneWide"] = true }
        if let limit { body["resultsLimit"] = .int(limit) }
        if let marker { body["continuationMarker"] = .string(marker) }
        if let desiredKeys { body["desiredKeys"] = .array(desiredKeys.map(JSON.string)) }
        return try await post("records/query", .object(body), scope: scope)
    }

    /// Every page of a query, following continuation markers; the record names in order.
    func queryAll(
        _ recordType: String, filters: [JSON] = [], sorts: [JSON] = [], zone: String? = nil, limit: Int
    ) async throws -> [String] {
        var names: [String] = []
        var marker: String?
        repeat {
            let reply = try await query(recordType, filters: filters, sorts: sorts, zone: zone, limit: limit, marker: marker)
            guard reply.status == 200 else { throw QueryTestError(reply.text) }
            names += reply.recordNames
            marker = reply["continuationMarker"]?.string
        } while marker != nil
        return names
    }
}

struct QueryTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension TestClient.Reply {
    /// The `recordName` of each record of the answer, in order.
    var recordNames: [String] { records.compactMap { $0["recordName"]?.string } }
    var reason: String { json["reason"]?.string ?? "" }
}

/// A `filterBy` entry on a field; `type` names the value's type when given.
func filter(_ field: String, _ comparator: String, _ value: JSON, type: String? = nil, distance: Double? = nil) -> JSON {
    var fieldValue: [String: JSON] = ["value": value]
    if let type { fieldValue["type"] = .string(type) }
    var members: [String: JSON] = [
        "comparator": .string(comparator), "fieldName": .string(field), "fieldValue": .object(fieldValue),
    ]
    if let distance { members["distance"] = .double(distance) }
    return .object(members)
}

/// A `filterBy` entry on a system field.
func systemFilter(_ field: String, _ comparator: String, _ value: JSON, type: String? = nil) -> JSON {
    var fieldValue: [String: JSON] = ["value": value]
    if let type { fieldValue["type"] = .string(type) }
    return ["comparator": .string(comparator), "systemFieldName": .string(field), "fieldValue": .object(fieldValue)]
}

/// A `sortBy` entry.
func sort(_ field: String, ascending: Bool = true, system: Bool = false, relativeTo location: JSON? = nil) -> JSON {
    var members: [String: JSON] = [system ? "systemFieldName" : "fieldName": .string(field), "ascending": .bool(ascending)]
    if let location { members["relativeLocation"] = location }
    return .object(members)
}

/// A `records/modify` operation with typed fields (`name: (value, type)`).
func typedOp(_ type: String, _ name: String, _ recordType: String, _ fields: [String: (JSON, String)]) -> JSON {
    let typed = fields.mapValues { value, type -> JSON in ["value": value, "type": .string(type)] }
    return [
        "operationType": .string(type),
        "record": ["recordName": .string(name), "recordType": .string(recordType), "fields": .object(typed)],
    ]
}

/// A LOCATION value.
func location(_ latitude: Double, _ longitude: Double) -> JSON {
    ["latitude": .double(latitude), "longitude": .double(longitude)]
}
