import Instrumentation
import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `records/modify`: validates the whole request first (so bad input never half-writes),
    /// then applies it to one zone in one transaction.
    func modifyRecords(_ call: APICall, shared: SharedZoneAccess? = nil) async throws -> JSON {
        guard var caller = call.identity.caller else {
            throw CloudKitError(
                .authenticationRequired, "writing needs a signed-in user (ckWebAuthToken) or a server-to-server key")
        }
        let zoneID = try call.zoneID()
        let operationReaders = try call.body.required("operations").array()
        guard operationReaders.count <= ProtocolLimits.maxRecordOperations else {
            throw CloudKitError(
                .limitExceeded,
                "\(operationReaders.count) operations in one request; the limit is \(ProtocolLimits.maxRecordOperations): split the batch")
        }
        let defaultKeys = try call.desiredKeys()
        var pending: [PendingRecordOperation] = []
        var userRecords: [UserIdentity] = []
        for reader in operationReaders {
            let typeName = try reader.required("operationType").string()
            guard let type = RecordOperationType(rawValue: typeName) else {
                throw CloudKitError.badRequest(
                    "'\(reader.path).operationType': unknown operation type '\(typeName)'; expected one of "
                        + RecordOperationType.allCases.map(\.rawValue).joined(separator: ", "))
            }
            let recordReader = try reader.required("record")
            var record = try Record(wire: recordReader)
            let sharing = try RecordSharingParts(reader: recordReader, record: &record)
            try SchemaRules.checkEncryptedFields(of: record, scope: call.database.scope)
            if !type.isDelete {
                try KeyDirectoryRules.checkSave(of: record, scope: call.database.scope, caller: caller.userRecordName)
            }
            if let recordZone = record.zoneID {
                try call.identity.checkOwner(of: recordZone)
                guard recordZone.zoneName == zoneID.zoneName else {
                    throw CloudKitError.badRequest(
                        "'\(recordReader.path).zoneID' is \(recordZone.zoneName) but the request's zoneID is "
                            + "\(zoneID.zoneName): a request modifies one zone")
                }
            }
            if record.recordName.isEmpty {
                guard type == .create || type == .forceUpdate || type == .forceReplace else {
                    throw CloudKitError.badRequest("'\(recordReader.path).recordName' is required for \(typeName)")
                }
                record.recordName = UUID().uuidString
            }
            var named = record
            if sharing.isShare { named.recordType = "" }  // CloudKit's own type, not an identifier
            try NameRules.check(named, at: recordReader.path)
            pending.append(
                PendingRecordOperation(
                    type: type, record: record, path: recordReader.path,
                    desiredKeys: try call.desiredKeys(in: reader) ?? defaultKeys, sharing: sharing,
                    untyped: type.isDelete ? nil : try UntypedValues(record: recordReader)))
        }
        if let shared {
            try await checkSharedWrites(pending, access: shared, zone: zoneID.zoneName, in: call.database)
        }
        // The schema: in development new types and fields join it, in production they are
        // refused. Shares are CloudKit's own type, outside every schema.
        let saved = pending.indices.filter { !pending[$0].type.isDelete && pending[$0].sharing?.isShare != true }
        var savedRecords = saved.map { pending[$0].record }
        try await schemas.admit(
            &savedRecords, untyped: saved.map { pending[$0].untyped ?? UntypedValues() }, database: call.database)
        for (index, record) in zip(saved, savedRecords) { pending[index].record = record }
        try await applySharing(&pending, zone: zoneID, in: call.database)

        var operations: [RecordOperation] = []
        for item in pending {
            let operation = RecordOperation(type: item.type, record: item.record)
            guard operation.fieldsJSON.utf8.count <= ProtocolLimits.maxRecordBytes else {
                throw CloudKitError.badRequest(
                    "record '\(item.record.recordName)' is \(operation.fieldsJSON.utf8.count) bytes; the limit is 1 MB per record")
            }
            operations.append(operation)
            if let user = try await prepareUserRecordWrite(operation, path: item.path, zone: zoneID.zoneName, call) {
                userRecords.append(user)
            }
        }
        // The whole request is valid: the user records it writes exist before it runs.
        for user in userRecords { try await ensureUserRecord(of: user, call) }

        // CloudKit applies atomic only in custom zones; the default zone is never atomic.
        let atomic = (try call.body.optionalBool("atomic") ?? false) && !zoneID.isDefault
        var policy = try await writePolicy(call)
        // A flood in the background lane commits a large batch of plain saves in parts.
        if pending.allSatisfy({ !$0.implied && $0.sharing?.isShare != true }) {
            policy.transactionRecordLimit = call.transactionRecordLimit
        }
        let trace = ModifyTrace(tracer: tracer, zone: zoneID.zoneName, call: call, names: pending.map(\.record.recordName))
        caller.traceParent = trace?.commitTraceParent
        let outcome: ModifyOutcome
        do {
            outcome = try await commits.modifyRecords(
                operations, zone: zoneID.zoneName, atomic: atomic, policy: policy, caller: caller, in: call.database)
        } catch {
            trace?.failed(error)
            throw error
        }
        trace?.committed(outcome)
        await endParticipations(pending, results: outcome.results, call.identity)
        if let metrics, outcome.commit != nil { Self.countCommit(outcome.results, in: metrics) }

        var items: [JSON] = []
        for (index, result) in outcome.results.enumerated() where !pending[index].implied {
            switch result {
            case .saved(let stored):
                items.append(try call.recordJSON(stored, zoneName: zoneID.zoneName, desiredKeys: pending[index].desiredKeys))
            case .deleted(let name):
                items.append(
                    .object([
                        "recordName": .string(name), "deleted": .bool(true),
                        "zoneID": call.responseZoneID(zoneID.zoneName).wireJSON,
                    ]))
            case .failed(let error):
                items.append(call.errorJSON(error))
            }
        }
        return .object(["records": .array(items)])
    }

    /// Counts a committed `records/modify`: its saved and deleted records.
    private static func countCommit(_ results: [RecordResult], in metrics: ServerMetrics) {
        var saved = 0
        var deleted = 0
        for result in results {
            switch result {
            case .saved: saved += 1
            case .deleted: deleted += 1
            case .failed: break
            }
        }
        metrics.countCommit(saved: saved, deleted: deleted)
    }

    /// The record names a `records/lookup` asks for, checked, and each one's `desiredKeys`.
    static func lookupRequest(_ call: APICall) throws(CloudKitError) -> (names: [String], keys: [Set<String>?]) {
        let readers = try call.body.required("records").array()
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(
                .limitExceeded, "\(readers.count) records in one lookup; the limit is \(ProtocolLimits.maxOperations)")
        }
        var names: [String] = []
        var keys: [Set<String>?] = []
        let defaultKeys = try call.desiredKeys()
        for reader in readers {
            let nameReader = try reader.required("recordName")
            let name = try nameReader.string()
            try NameRules.checkName(name, at: nameReader.path)
            names.append(name)
            keys.append(try call.desiredKeys(in: reader) ?? defaultKeys)
        }
        return (names, keys)
    }

    /// `records/lookup`.
    func lookupRecords(_ call: APICall) async throws -> JSON {
        let zoneID = try call.zoneID()
        let (names, keys) = try Self.lookupRequest(call)
        var found = try await store.lookupRecords(names, zone: zoneID.zoneName, in: call.database)
        for (index, stored) in found.enumerated() where stored == nil {
            // A user's record exists from the first time it is asked for.
            if let user = try await userRecordOwner(named: names[index], zone: zoneID.zoneName, call) {
                found[index] = try await ensureUserRecord(of: user, call)
            }
        }
        let access = try await publicAccess(call)
        var records: [JSON] = []
        var read = 0
        for (index, stored) in found.enumerated() {
            if let stored, let access, !mayRead(stored, access, call) {
                records.append(
                    call.errorJSON(
                        access.denial(.read, stored.recordType, recordName: names[index], accessor: call.identity.accessor)))
            } else if let stored {
                records.append(try call.recordJSON(stored, zoneName: zoneID.zoneName, desiredKeys: keys[index]))
                read += 1
            } else {
                records.append(
                    call.errorJSON(CloudKitError(.notFound, "record '\(names[index])' does not exist", recordName: names[index])))
            }
        }
        metrics?.countRecordsRead(read, via: .lookup)
        return .object(["records": .array(records)])
    }

    /// `records/changes`: the zone's change feed since `syncToken`.
    func recordChanges(_ call: APICall) async throws -> JSON {
        guard try call.body.optional("zoneID") != nil else {
            throw CloudKitError.badRequest("'zoneID' is required")
        }
        return try await changesPage(call, reader: call.body)
    }

    /// `changes/zone`: several zones' change feeds; per-zone errors come back in place.
    func zoneRecordChanges(_ call: APICall) async throws -> JSON {
        let readers = try call.body.required("zones").array()
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(.limitExceeded, "\(readers.count) zones in one request; the limit is \(ProtocolLimits.maxOperations)")
        }
        var zones: [JSON] = []
        for reader in readers {
            do {
                zones.append(try await changesPage(call, reader: reader))
            } catch let error as CloudKitError {
                // The item names its zone as a success item would (``APICall/errorJSON(_:)``
                // fills in the owner); a zoneID that does not parse leaves it out.
                var error = error
                if error.zoneID == nil, let zoneReader = try? reader.optional("zoneID") {
                    error.zoneID = try? ZoneID(wire: zoneReader)
                }
                zones.append(call.errorJSON(error))
            }
        }
        return .object(["zones": .array(zones)])
    }

    private func changesPage(_ call: APICall, reader: WireReader) async throws -> JSON {
        let zoneID = try call.zoneID(in: reader)
        let token = try reader.optionalString("syncToken")
        let limit = try call.resultsLimit(in: reader)
        let keys = try call.desiredKeys(in: reader)
        let countRemaining = try reader.optionalBool(Self.countRemainingKey) ?? false
        let access = try await publicAccess(call)
        let records: JSON
        let page: (syncToken: String, moreComing: Bool)
        var written: WrittenRecordChangesPage?
        if access == nil && keys == nil && !call.numbersAsStrings {
            // The common feed: records as the store wrote them, nothing decoded — unless a
            // record holds an asset, whose download URL is made for this reader.
            written = try await store.writtenRecordChanges(
                zone: zoneID.zoneName, since: token, limit: limit, zoneClosing: call.zoneClosing(zoneID.zoneName),
                in: call.database)
            if let page = written, AssetReferences.mentioned(in: page.recordsJSON) || SystemFields.mentioned(in: page.recordsJSON) {
                written = nil
            }
        }
        if let written {
            records = .rawUTF8(written.recordsJSON)
            page = (written.syncToken, written.moreComing)
            metrics?.countRecordsRead(written.recordCount, via: .changes)
        } else {
            let stored = try await store.recordChanges(zone: zoneID.zoneName, since: token, limit: limit, in: call.database)
            let readable = access == nil ? stored.records : stored.records.filter { mayRead($0, access, call) }
            records = try call.recordsJSON(readable, zoneName: zoneID.zoneName, desiredKeys: keys)
            page = (stored.syncToken, stored.moreComing)
            metrics?.countRecordsRead(readable.count, via: .changes)
        }
        if let span = ServiceContext.currentSpan { FetchTrace.delivered(records, zone: zoneID.zoneName, span: span) }
        metrics?.countChangePage()
        var answer: [String: JSON] = [
            "zoneID": call.responseZoneID(zoneID.zoneName).wireJSON,
            "records": records,
            "syncToken": .string(page.syncToken),
            "moreComing": .bool(page.moreComing),
        ]
        // Not where records are filtered per reader (a public database's roles): a count
        // would tell how many records the reader may not see.
        if countRemaining, access == nil {
            let remaining = page.moreComing
                ? try await store.countRecordChanges(zone: zoneID.zoneName, since: page.syncToken, in: call.database) : 0
            answer[Self.remainingChangesKey] = .int(remaining)
        }
        return .object(answer)
    }

    /// Nimbus's extension of `records/changes` for progress displays: a request with
    /// `"countRemaining": true` gets `"remainingChanges"`, how many changes the zone holds
    /// after the answer's `syncToken` (at most the tombstones of records created since above
    /// what the next pages return; ``RecordStore/countRecordChanges(zone:since:in:)``).
    /// Counting reads the zone's index from the token on, so clients ask once per fetch.
    static let countRemainingKey = "countRemaining"
    static let remainingChangesKey = "remainingChanges"
}

import Foundation
