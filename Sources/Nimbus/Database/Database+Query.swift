import NimbusProtocol

extension Database {
    /// Records matching a query (`records/query`), each with its own result, and a cursor
    /// when more matched than were returned.
    /// - Parameters:
    ///   - query: what to match.
    ///   - zoneID: the zone to search; `nil` searches every zone of the database.
    ///   - desiredKeys: the fields to return; all when `nil`.
    ///   - resultsLimit: the most records to return; the server's page size when `nil`.
    public func records(
        matching query: Query, inZoneWith zoneID: ZoneID? = nil, desiredKeys: [String]? = nil, resultsLimit: Int? = nil
    ) async throws -> (matchResults: [(Record.ID, Result<Record, NimbusError>)], queryCursor: QueryCursor?) {
        try await runQuery(query, zoneID: zoneID, marker: nil, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
    }

    /// The next results of a query that returned a cursor.
    public func records(
        continuingMatchFrom cursor: QueryCursor, desiredKeys: [String]? = nil, resultsLimit: Int? = nil
    ) async throws -> (matchResults: [(Record.ID, Result<Record, NimbusError>)], queryCursor: QueryCursor?) {
        try await runQuery(
            cursor.query, zoneID: cursor.zoneID, marker: cursor.continuationMarker, desiredKeys: desiredKeys,
            resultsLimit: resultsLimit)
    }

    private func runQuery(
        _ query: Query, zoneID: ZoneID?, marker: String?, desiredKeys: [String]?, resultsLimit: Int?
    ) async throws -> (matchResults: [(Record.ID, Result<Record, NimbusError>)], queryCursor: QueryCursor?) {
        var body: [String: JSON] = ["query": query.wireJSON]
        if let zoneID { body["zoneID"] = zoneID.wireJSON } else { body["zoneWide"] = true }
        if let marker { body["continuationMarker"] = .string(marker) }
        if let desiredKeys { body["desiredKeys"] = .array(desiredKeys.map(JSON.string)) }
        if let resultsLimit { body["resultsLimit"] = .int(resultsLimit) }
        let response = try await send("records/query", body: .object(body), zoneID: zoneID)
        guard let items = response["records"]?.array else {
            throw NimbusError.malformedResponse("records/query returned no records array")
        }
        var results: [(Record.ID, Result<Record, NimbusError>)] = []
        for item in items {
            let recordZone = item["zoneID"].flatMap { try? ZoneID(wire: WireReader($0)) } ?? zoneID ?? .default
            let placed = ZoneID(zoneName: recordZone.zoneName, ownerRecordName: zoneID?.ownerRecordName)
            let result = await opened(Result { () throws(NimbusError) in try Self.record(from: item, zoneID: placed) })
            let name = item["recordName"]?.string ?? ""
            results.append((Record.ID(recordName: name, zoneID: placed), result))
        }
        let cursor = response["continuationMarker"]?.string.map {
            QueryCursor(query: query, zoneID: zoneID, continuationMarker: $0)
        }
        return (results, cursor)
    }
}
