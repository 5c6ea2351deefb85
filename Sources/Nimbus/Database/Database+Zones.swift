import NimbusProtocol

extension Database {
    /// Every zone of the database (`zones/list`).
    public func allRecordZones() async throws -> [RecordZone] {
        let response = try await send("zones/list", method: .get, body: nil)
        guard let zones = response["zones"]?.array else {
            throw NimbusError.malformedResponse("zones/list returned no zones array")
        }
        return try zones.map { try RecordZone(wire: $0) }
    }

    /// One zone (`zones/lookup`).
    /// - Throws: ``NimbusError/Code/zoneNotFound``.
    public func recordZone(for zoneID: ZoneID) async throws -> RecordZone {
        let response = try await send(
            "zones/lookup", body: .object(["zones": .array([zoneID.wireJSON])]), zoneID: zoneID)
        let items = try Self.items(response, "zones", count: 1)
        if let error = NimbusError(wire: items[0], zoneID: zoneID) { throw error }
        return try RecordZone(wire: items[0])
    }

    /// Creates a zone (saving an existing zone succeeds and changes nothing).
    @discardableResult
    public func save(_ zone: RecordZone) async throws -> RecordZone {
        let results = try await modifyRecordZones(saving: [zone], deleting: [])
        return try results.saveResults[zone.zoneID, default: .failure(.malformedResponse("no result"))].get()
    }

    /// Deletes a zone and all its records.
    @discardableResult
    public func deleteRecordZone(withID zoneID: ZoneID) async throws -> ZoneID {
        let results = try await modifyRecordZones(saving: [], deleting: [zoneID])
        try results.deleteResults[zoneID, default: .failure(.malformedResponse("no result"))].get()
        return zoneID
    }

    /// Creates and deletes zones in one request (`zones/modify`), with each item's result.
    public func modifyRecordZones(
        saving zonesToSave: [RecordZone], deleting zoneIDsToDelete: [ZoneID]
    ) async throws -> (
        saveResults: [ZoneID: Result<RecordZone, NimbusError>], deleteResults: [ZoneID: Result<Void, NimbusError>]
    ) {
        let operations: [JSON] =
            zonesToSave.map { .object(["operationType": "create", "zone": .object(["zoneID": $0.zoneID.wireJSON])]) }
            + zoneIDsToDelete.map { .object(["operationType": "delete", "zone": .object(["zoneID": $0.wireJSON])]) }
        let response = try await send("zones/modify", body: .object(["operations": .array(operations)]))
        let items = try Self.items(response, "zones", count: operations.count)
        var saveResults: [ZoneID: Result<RecordZone, NimbusError>] = [:]
        var deleteResults: [ZoneID: Result<Void, NimbusError>] = [:]
        for (zone, item) in zip(zonesToSave, items) {
            if let error = NimbusError(wire: item, zoneID: zone.zoneID) {
                saveResults[zone.zoneID] = .failure(error)
            } else {
                saveResults[zone.zoneID] = Result { () throws(NimbusError) in
                    do { return try RecordZone(wire: item) } catch { throw error as? NimbusError ?? .malformedResponse("\(error)") }
                }
            }
        }
        for (zoneID, item) in zip(zoneIDsToDelete, items.dropFirst(zonesToSave.count)) {
            if let error = NimbusError(wire: item, zoneID: zoneID) {
                deleteResults[zoneID] = .failure(error)
            } else {
                deleteResults[zoneID] = .success(())
            }
        }
        return (saveResults, deleteResults)
    }
}
