import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `records/query`: `query {recordType, filterBy, sortBy}`, `zoneID` or `zoneWide`,
    /// `resultsLimit`, `desiredKeys`, `continuationMarker` → `records`, `continuationMarker`
    /// (only when more records match).
    ///
    /// The query is checked against the container environment's schema (in development the
    /// indexes it needs are created on first use) and run by ``QueryExecutor``.
    func queryRecords(_ call: APICall, shared: SharedZoneAccess? = nil) async throws -> JSON {
        let queryWire = try call.body.required("query")
        let query = try RecordQuery(wire: queryWire)
        try NameRules.check(query, at: queryWire.path)
        let zoneWide = shared == nil ? try call.body.optionalBool("zoneWide") ?? false : false
        let zoneID = zoneWide ? nil : try call.zoneID()
        let limit = try call.resultsLimit()
        let keys = try call.desiredKeys()
        let marker = try call.body.optionalString("continuationMarker")
        let ownRecordsOf = try queryReader(query.recordType, try await publicAccess(call), call)
        let plan = try await schemas.plan(query, database: call.database)
        if let zoneID, (try await store.lookupZones([zoneID.zoneName], in: call.database).first ?? nil) == nil {
            throw CloudKitError(
                .zoneNotFound, "zone '\(zoneID.zoneName)' does not exist in this database",
                zoneID: call.responseZoneID(zoneID.zoneName))
        }
        var page = try await QueryExecutor(store: store).run(
            plan, zone: zoneID?.zoneName, limit: limit, continuationMarker: marker, in: call.database)
        if let me = ownRecordsOf {
            // Only creators read this type: the caller's own records (a page may come back
            // short; its continuationMarker still goes on from where the scan stopped).
            page.hits.removeAll { $0.record.created.userRecordName != me }
        }
        if let shared, let zoneID {
            // Only the records shared with the caller (a page may come back short, as above).
            let visible = Set(try await readable(page.hits.map(\.record), access: shared, zone: zoneID.zoneName, call).map(\.recordName))
            page.hits.removeAll { !visible.contains($0.record.recordName) }
        }

        let records: JSON
        if let zone = page.hits.first?.zone, page.hits.allSatisfy({ $0.zone == zone }) {
            records = try call.recordsJSON(page.hits.map(\.record), zoneName: zone, desiredKeys: keys)
        } else {
            var elements: [JSON] = []
            for hit in page.hits {
                elements.append(try call.recordJSON(hit.record, zoneName: hit.zone, desiredKeys: keys))
            }
            records = .array(elements)
        }
        metrics?.countRecordsRead(page.hits.count, via: .query)
        var response: [String: JSON] = ["records": records]
        if let next = page.continuationMarker { response["continuationMarker"] = .string(next) }
        return .object(response)
    }
}
