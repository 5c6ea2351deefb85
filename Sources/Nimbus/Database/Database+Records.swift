import NimbusProtocol

extension Database {
    /// Fetches one record.
    /// - Throws: ``NimbusError/Code/unknownItem`` when it does not exist.
    public func record(for recordID: Record.ID, desiredKeys: [String]? = nil) async throws -> Record {
        let results = try await records(for: [recordID], desiredKeys: desiredKeys)
        guard let result = results[recordID] else {
            throw NimbusError.malformedResponse("no result for record \(recordID)")
        }
        return try result.get()
    }

    /// Fetches records, each with its own result (missing records fail with
    /// ``NimbusError/Code/unknownItem``). One request per zone.
    /// - Parameters:
    ///   - recordIDs: the records to fetch, from any zones.
    ///   - desiredKeys: the fields to fetch; all when `nil`.
    public func records(
        for recordIDs: [Record.ID], desiredKeys: [String]? = nil
    ) async throws -> [Record.ID: Result<Record, NimbusError>] {
        var results: [Record.ID: Result<Record, NimbusError>] = [:]
        let groups = Self.groupedByZone(recordIDs, zone: \.zoneID)
        for (zoneID, ids) in groups {
            var body: [String: JSON] = [
                "zoneID": zoneID.wireJSON,
                "records": .array(ids.map { .object(["recordName": .string($0.recordName)]) }),
            ]
            if let desiredKeys { body["desiredKeys"] = .array(desiredKeys.map(JSON.string)) }
            let items: [JSON]
            do {
                let response = try await send("records/lookup", body: .object(body), zoneID: zoneID)
                items = try Self.items(response, "records", count: ids.count)
            } catch let error as NimbusError where groups.count > 1 && error.code != .operationCancelled {
                for id in ids { results[id] = .failure(error.about(id)) }
                continue
            }
            for (id, item) in zip(ids, items) {
                results[id] = await opened(Result { () throws(NimbusError) in try Self.record(from: item, zoneID: zoneID) })
            }
        }
        return results
    }

    /// Saves one record, uploading the files of its new ``Asset``s first.
    /// - Parameter assetProgress: called as the files of the record's assets upload, with
    ///   the field and the bytes sent of that file.
    /// - Returns: the record as the server saved it (new change tag, no changed keys).
    /// - Throws: ``NimbusError/Code/serverRecordChanged`` (with client, ancestor and server
    ///   records) when the server's copy changed and `savePolicy` checks for that.
    @discardableResult
    public func save(
        _ record: Record, savePolicy: SavePolicy = .ifServerRecordUnchanged,
        assetProgress: (@Sendable (_ field: String, TransferProgress) -> Void)? = nil
    ) async throws -> Record {
        let results = try await modifyRecords(
            saving: [record], savePolicy: savePolicy, atomically: false,
            assetProgress: assetProgress.map { report in { @Sendable _, field, progress in report(field, progress) } })
        guard let result = results.saveResults[record.id] else {
            throw NimbusError.malformedResponse("no result for record \(record.id)")
        }
        return try result.get()
    }

    /// Deletes one record, whatever its change tag.
    @discardableResult
    public func deleteRecord(withID recordID: Record.ID) async throws -> Record.ID {
        let results = try await modifyRecords(deleting: [recordID], atomically: false)
        guard let result = results.deleteResults[recordID] else {
            throw NimbusError.malformedResponse("no result for record \(recordID)")
        }
        try result.get()
        return recordID
    }

    /// Saves and deletes records, returning each item's result.
    ///
    /// Files of new ``Asset``s in the fields a save sends are uploaded first (upload URLs
    /// from `assets/upload`, at most 200 per request; each file streamed, and continued from
    /// what the server holds if the connection breaks), then the records are saved with the
    /// uploads' receipts. A file that cannot be read throws
    /// ``NimbusError/Code/assetFileNotFound`` before anything is sent.
    ///
    /// One `records/modify` request per zone (CloudKit Web Services modifies one zone per
    /// request, and atomicity holds within a zone). A request that fails as a whole throws
    /// when all items are in one zone; with several zones, its error becomes each of that
    /// zone's items' result, so results of the other zones are not lost.
    ///
    /// - Parameters:
    ///   - recordsToSave: records to create or change.
    ///   - recordIDsToDelete: records to delete, whatever their change tags.
    ///   - savePolicy: see ``SavePolicy``.
    ///   - atomically: in custom zones, all of a zone's changes succeed or none do (items that
    ///     failed only for that reason get ``NimbusError/Code/batchRequestFailed``).
    ///   - deleteChangeTags: change tags for some of the deletions: those are locked deletes,
    ///     which fail with ``NimbusError/Code/serverRecordChanged`` (carrying the server's
    ///     record) if the record changed since that version. Other deletions are forced.
    ///   - assetProgress: called as asset files upload: the record, the field, the bytes sent.
    public func modifyRecords(
        saving recordsToSave: [Record] = [], deleting recordIDsToDelete: [Record.ID] = [],
        savePolicy: SavePolicy = .ifServerRecordUnchanged, atomically: Bool = true,
        deleteChangeTags: [Record.ID: String] = [:],
        assetProgress: (@Sendable (Record.ID, String, TransferProgress) -> Void)? = nil
    ) async throws -> (
        saveResults: [Record.ID: Result<Record, NimbusError>], deleteResults: [Record.ID: Result<Void, NimbusError>]
    ) {
        enum Item { case save(Record), delete(Record.ID) }
        let uploaded = try await sealed(
            try await uploadingAssets(of: recordsToSave, policy: savePolicy, progress: assetProgress), policy: savePolicy)
        // What is sent carries the receipts; results and errors name the records as given.
        let outgoing = Dictionary(zip(recordsToSave.map(\.id), uploaded), uniquingKeysWith: { _, last in last })
        var items: [Item] = recordsToSave.map(Item.save)
        items += recordIDsToDelete.map(Item.delete)
        func itemID(_ item: Item) -> Record.ID {
            switch item {
            case .save(let record): return record.id
            case .delete(let id): return id
            }
        }
        var saveResults: [Record.ID: Result<Record, NimbusError>] = [:]
        var deleteResults: [Record.ID: Result<Void, NimbusError>] = [:]
        func fail(_ item: Item, _ error: NimbusError) {
            switch item {
            case .save(let record): saveResults[record.id] = .failure(error)
            case .delete(let id): deleteResults[id] = .failure(error)
            }
        }

        let groups = Self.groupedByZone(items) { itemID($0).zoneID }
        for (zoneID, zoneItems) in groups {
            let operations: [JSON] = zoneItems.map { item in
                switch item {
                case .save(let record): return (outgoing[record.id] ?? record).modifyOperationJSON(policy: savePolicy)
                case .delete(let id):
                    if let tag = deleteChangeTags[id] {
                        return .object([
                            "operationType": "delete",
                            "record": .object(["recordName": .string(id.recordName), "recordChangeTag": .string(tag)]),
                        ])
                    }
                    return .object([
                        "operationType": "forceDelete", "record": .object(["recordName": .string(id.recordName)]),
                    ])
                }
            }
            let body: JSON = .object([
                "zoneID": zoneID.wireJSON, "operations": .array(operations), "atomic": .bool(atomically),
            ])
            let responseItems: [JSON]
            do {
                let response = try await send("records/modify", body: body, zoneID: zoneID)
                responseItems = try Self.items(response, "records", count: zoneItems.count)
            } catch let error as NimbusError where groups.count > 1 && error.code != .operationCancelled {
                for item in zoneItems { fail(item, error.about(itemID(item))) }
                continue
            }
            for (item, json) in zip(zoneItems, responseItems) {
                switch item {
                case .save(let record):
                    if let error = NimbusError(wire: json, zoneID: zoneID, clientRecord: record) {
                        saveResults[record.id] = .failure(await opened(error))
                    } else {
                        saveResults[record.id] = await opened(
                            Result { () throws(NimbusError) in try Self.record(from: json, zoneID: zoneID) },
                            answering: record, sent: outgoing[record.id])
                    }
                case .delete(let id):
                    if let error = NimbusError(wire: json, zoneID: zoneID) {
                        deleteResults[id] = .failure(error.about(id))
                    } else {
                        deleteResults[id] = .success(())
                    }
                }
            }
        }
        return (saveResults, deleteResults)
    }
}

extension Database {
    /// Groups items by zone, keeping the zones and the items in their first-seen order.
    static func groupedByZone<Item>(_ items: [Item], zone: (Item) -> ZoneID) -> [(ZoneID, [Item])] {
        var order: [ZoneID] = []
        var groups: [ZoneID: [Item]] = [:]
        for item in items {
            let zoneID = zone(item)
            if groups[zoneID] == nil { order.append(zoneID) }
            groups[zoneID, default: []].append(item)
        }
        return order.map { ($0, groups[$0]!) }
    }

    /// The array under `key`, which must have one entry per request item.
    static func items(_ response: JSON, _ key: String, count: Int) throws -> [JSON] {
        guard let items = response[key]?.array else {
            throw NimbusError.malformedResponse("the response has no '\(key)' array")
        }
        guard items.count == count else {
            throw NimbusError.malformedResponse("the response has \(items.count) \(key) for \(count) requested")
        }
        return items
    }

    /// A record (or the error in its place) from a response entry.
    static func record(from json: JSON, zoneID: ZoneID) throws(NimbusError) -> Record {
        if let error = NimbusError(wire: json, zoneID: zoneID) { throw error }
        do throws(CloudKitError) {
            var record = Record(wire: try NimbusProtocol.Record(wire: WireReader(json)), zoneID: zoneID)
            record.readSharingMembers(from: json)
            return record
        } catch {
            throw NimbusError.malformedResponse(error.reason)
        }
    }
}

extension NimbusError {
    /// This error, attributed to a record.
    func about(_ recordID: Record.ID) -> NimbusError {
        var copy = self
        copy.recordID = recordID
        return copy
    }
}
