import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `assets/rereference`: the asset dictionaries of existing `ASSET` fields
    /// (`assets: [{recordName, fieldName}]`), in request order, each to be saved as another
    /// record's `ASSETID` value in this database without uploading the bytes again.
    ///
    /// The request is checked whole, as CloudKit does: a missing record, a missing or
    /// non-asset field or a record the caller may not read fails it with one error. The
    /// dictionaries carry no receipt: a save names an asset the database already holds by its
    /// `fileChecksum` and `size`, and the database keeps the bytes while any record holds them.
    func rereferenceAssets(_ call: APICall) async throws -> JSON {
        let zoneID = try call.zoneID()
        let readers = try call.body.required("assets").array()
        guard !readers.isEmpty else { throw CloudKitError.badRequest("'assets' must name at least one asset field") }
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(
                .limitExceeded, "\(readers.count) asset fields in one request; the limit is \(ProtocolLimits.maxOperations)")
        }
        var fields: [(recordName: String, fieldName: String)] = []
        for reader in readers {
            let nameReader = try reader.required("recordName")
            let recordName = try nameReader.string()
            try NameRules.checkName(recordName, at: nameReader.path)
            let fieldReader = try reader.required("fieldName")
            let fieldName = try fieldReader.string()
            try NameRules.checkIdentifier(fieldName, at: fieldReader.path, what: "field name")
            fields.append((recordName, fieldName))
        }
        if !zoneID.isDefault {
            guard case .some(.some) = try await store.lookupZones([zoneID.zoneName], in: call.database).first else {
                throw FeedRules.zoneNotFound(zoneID.zoneName, in: call.database)
            }
        }
        var names: [String] = []
        for field in fields where !names.contains(field.recordName) { names.append(field.recordName) }
        let found = try await store.lookupRecords(names, zone: zoneID.zoneName, in: call.database)
        var records: [String: StoredRecord] = [:]
        for case let stored? in found where !stored.deleted { records[stored.recordName] = stored }
        let access = try await publicAccess(call)
        var assets: [JSON] = []
        for (recordName, fieldName) in fields {
            guard let stored = records[recordName] else {
                throw CloudKitError(
                    .badRequest, "record '\(recordName)' does not exist in zone '\(zoneID.zoneName)'; nothing was re-referenced",
                    recordName: recordName)
            }
            if let access, !mayRead(stored, access, call) {
                throw access.denial(.read, stored.recordType, recordName: recordName, accessor: call.identity.accessor)
            }
            let asset = try Self.rereferencedAsset(stored.fields()[fieldName], field: fieldName, record: recordName)
            guard case .object(var members) = asset.stored.wireJSON else { continue }
            members["recordName"] = .string(recordName)
            members["fieldName"] = .string(fieldName)
            assets.append(.object(members))
        }
        return .object(["assets": .array(assets)])
    }

    /// The one asset `value` holds, or why it cannot be re-referenced.
    static func rereferencedAsset(_ value: FieldValue?, field: String, record: String) throws(CloudKitError) -> Asset {
        switch value {
        case .asset(let asset): return asset
        case .none:
            throw CloudKitError(.badRequest, "record '\(record)' has no field '\(field)'", recordName: record)
        case .list(let type, _) where type == .asset:
            throw CloudKitError(
                .badRequest,
                "field '\(field)' of record '\(record)' is an ASSET_LIST; copy its elements (each names its fileChecksum "
                    + "and size) into the other record's list instead",
                recordName: record)
        case .some(let other):
            throw CloudKitError(
                .badRequest, "field '\(field)' of record '\(record)' is \(other.type.rawValue), not ASSET", recordName: record)
        }
    }
}
