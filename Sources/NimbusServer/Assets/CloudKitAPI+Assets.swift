import Foundation
import NimbusProtocol
import NimbusStore

extension CloudKitAPI {
    /// `assets/upload`: an upload URL per asset field named, each bound to the caller, the
    /// database, the zone, the record and the field, valid for ``AssetSettings/uploadLifetime``.
    func requestAssetUploads(_ call: APICall) async throws -> JSON {
        guard let caller = call.identity.caller else {
            throw CloudKitError(
                .authenticationRequired, "uploading assets needs a signed-in user (ckWebAuthToken) or a server-to-server key")
        }
        guard let links = call.assetLinks else {
            throw CloudKitError(.internalError, "this server keeps no asset bytes")
        }
        let zoneID = try call.zoneID()
        if !zoneID.isDefault {
            guard case .some(.some) = try await store.lookupZones([zoneID.zoneName], in: call.database).first else {
                throw FeedRules.zoneNotFound(zoneID.zoneName, in: call.database)
            }
        }
        let readers = try call.body.required("tokens").array()
        guard !readers.isEmpty else { throw CloudKitError.badRequest("'tokens' must name at least one asset field") }
        try await uploadQuota?.check(call.database)
        guard readers.count <= ProtocolLimits.maxOperations else {
            throw CloudKitError(
                .limitExceeded, "\(readers.count) tokens in one request; the limit is \(ProtocolLimits.maxOperations)")
        }
        let now = now()
        let expiresAt = now + assetSettings.uploadLifetime.milliseconds
        var uploads: [AssetUpload] = []
        for reader in readers {
            let fieldReader = try reader.required("fieldName")
            let field = try fieldReader.string()
            try NameRules.checkIdentifier(field, at: fieldReader.path, what: "field name")
            let recordName = try reader.optionalString("recordName") ?? UUID().uuidString
            try NameRules.checkName(recordName, at: "\(reader.path).recordName")
            let recordType = try reader.optionalString("recordType")
            if let recordType { try NameRules.checkIdentifier(recordType, at: "\(reader.path).recordType", what: "record type") }
            uploads.append(
                AssetUpload(
                    id: Self.newUploadID(), database: call.database, userRecordName: caller.userRecordName,
                    zone: zoneID.zoneName, recordName: recordName, recordType: recordType, fieldName: field,
                    createdAt: now, expiresAt: expiresAt))
        }
        try await assets.createAssetUploads(uploads)
        let tokens: [JSON] = uploads.map { upload in
            var members: [String: JSON] = [
                "recordName": .string(upload.recordName), "fieldName": .string(upload.fieldName),
                "url": .string(links.uploadURL(origin: call.origin, id: upload.id, expiresAt: upload.expiresAt)),
            ]
            if let type = upload.recordType { members["recordType"] = .string(type) }
            return .object(members)
        }
        return .object(["tokens": .array(tokens)])
    }

    /// 128 random bits as 32 hex digits.
    static func newUploadID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

extension APICall {
    /// `stored` with a fresh `downloadURL` on each asset value, for this caller.
    func servable(_ stored: StoredRecord) -> StoredRecord {
        guard !stored.deleted, assetLinks != nil, AssetReferences.mentioned(in: stored.fieldsJSON) else {
            return stored
        }
        var copy = stored
        copy.fieldsJSON = Record.fieldsJSONText(withDownloadURLs(stored.fields()))
        return copy
    }

    /// `record` (a conflict's `serverRecord`) with a fresh `downloadURL` on each asset value.
    func servable(_ record: Record) -> Record {
        guard assetLinks != nil, record.fields.values.contains(where: { !$0.assets.isEmpty }) else { return record }
        var copy = record
        copy.fields = withDownloadURLs(record.fields)
        return copy
    }

    private func withDownloadURLs(_ fields: [String: FieldValue]) -> [String: FieldValue] {
        guard let links = assetLinks else { return fields }
        let expiresAt = now + assetDownloadLifetime
        return fields.mapValues { value in
            value.mappingAssets { asset in
                var asset = asset.stored
                if let sha = Asset.sha256Hex(ofFileChecksum: asset.fileChecksum) {
                    asset.downloadURL = links.downloadURL(origin: origin, database: database, sha256: sha, expiresAt: expiresAt)
                }
                return asset
            }
        }
    }
}

extension FieldValue {
    /// The value with `transform` applied to each asset in it.
    func mappingAssets(_ transform: (Asset) -> Asset) -> FieldValue {
        switch self {
        case .asset(let asset): return .asset(transform(asset))
        case .list(let type, let values) where type == .asset:
            return .list(elementType: type, values.map { $0.mappingAssets(transform) })
        default: return self
        }
    }
}
