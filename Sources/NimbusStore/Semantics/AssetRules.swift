import NimbusProtocol

/// What ``ModifyPlanner`` needs to know about assets, read by the engine inside the modify
/// transaction: the uploads whose receipts the operations carry, and the assets the
/// database already holds that operations name without a receipt.
public struct AssetContext: Sendable {
    public var database: DatabaseKey
    /// Uploads by receipt.
    public var uploads: [String: AssetUpload]
    /// Sizes of the database's assets, by SHA-256 (hex).
    public var known: [String: Int64]

    public init(database: DatabaseKey, uploads: [String: AssetUpload] = [:], known: [String: Int64] = [:]) {
        self.database = database
        self.uploads = uploads
        self.known = known
    }

    /// The receipts of the asset values the saves of `operations` carry.
    public static func receipts(for operations: [RecordOperation]) -> [String] {
        var receipts = Set<String>()
        for operation in operations where !operation.type.isDelete {
            for value in operation.record.fields.values where value.holdsAssets {
                for asset in value.assets { if let receipt = asset.receipt { receipts.insert(receipt) } }
            }
        }
        return Array(receipts)
    }

    /// The SHA-256s (hex) of the asset values the saves of `operations` name without a receipt.
    public static func namedHashes(for operations: [RecordOperation]) -> [String] {
        var hashes = Set<String>()
        for operation in operations where !operation.type.isDelete {
            for value in operation.record.fields.values where value.holdsAssets {
                for asset in value.assets where asset.receipt == nil {
                    if let hash = Asset.sha256Hex(ofFileChecksum: asset.fileChecksum) { hashes.insert(hash) }
                }
            }
        }
        return Array(hashes)
    }

    /// Checks every asset value of a record about to be saved: a receipt must be one issued
    /// to `caller` for this database, zone, record and field, unspent (`spent` holds those
    /// spent earlier in the request), unexpired at `now`, its upload finished with the
    /// checksum and size the value names; a value without a receipt must name an asset the
    /// database holds. Returns the receipts the save spends.
    func check(_ record: Record, zone: String, caller: Caller, now: Int64, spent: Set<String>) throws(CloudKitError)
        -> [String]
    {
        var claims: [String] = []
        let name = record.recordName
        for (field, value) in record.fields.sorted(by: { $0.key < $1.key }) {
            for asset in value.assets {
                func fail(_ code: ServerErrorCode, _ reason: String) -> CloudKitError {
                    CloudKitError(code, "field '\(field)' of record '\(name)': \(reason)", recordName: name)
                }
                guard let receipt = asset.receipt else {
                    guard let hash = Asset.sha256Hex(ofFileChecksum: asset.fileChecksum), let size = known[hash] else {
                        throw fail(
                            .badRequest,
                            "no asset with fileChecksum \(asset.fileChecksum) is stored in this database; upload it "
                                + "(assets/upload) and send the singleFile dictionary with its receipt")
                    }
                    guard size == asset.size else {
                        throw fail(.badRequest, "the asset is \(size) bytes, not \(asset.size)")
                    }
                    continue
                }
                guard let upload = uploads[receipt] else {
                    throw fail(.badRequest, "the receipt is not one this server issued; upload the file again")
                }
                guard upload.database == database, upload.userRecordName == caller.userRecordName else {
                    throw fail(.accessDenied, "the receipt was issued to another user or database")
                }
                guard upload.zone == zone, upload.recordName == name, upload.fieldName == field else {
                    throw fail(
                        .badRequest,
                        "the receipt was issued for field '\(upload.fieldName)' of record '\(upload.recordName)' in zone "
                            + "'\(upload.zone)'; ask assets/upload for a token for this field")
                }
                guard !upload.used, !spent.contains(receipt), !claims.contains(receipt) else {
                    throw fail(.badRequest, "the receipt was already used; a receipt attaches one upload once")
                }
                guard upload.expiresAt > now else {
                    throw fail(.badRequest, "the receipt expired; upload the file again")
                }
                guard let completion = upload.completion else {
                    throw fail(.badRequest, "the upload has not finished; send the rest of the file first")
                }
                guard Asset.sha256Hex(ofFileChecksum: asset.fileChecksum) == completion.sha256 else {
                    throw fail(.badRequest, "fileChecksum does not match the uploaded file's checksum")
                }
                guard asset.size == completion.size else {
                    throw fail(.badRequest, "size \(asset.size) does not match the uploaded file's \(completion.size) bytes")
                }
                claims.append(receipt)
            }
        }
        return claims
    }
}

/// The assets a stored record version references, as every engine indexes them.
public enum AssetReferences {
    private static let marker = Array(#""ASSET"#.utf8)

    /// Whether a fields text may hold an asset (only those are parsed): a byte search.
    public static func mentioned(in fieldsJSON: String) -> Bool {
        FieldsText.contains(marker, in: fieldsJSON)
    }

    /// Whether JSON bytes (a written page of records) may hold an asset.
    public static func mentioned(in bytes: [UInt8]) -> Bool {
        FieldsText.contains(marker, in: bytes)
    }

    /// The SHA-256s (hex) of the assets a live record holds; none for a tombstone.
    public static func hashes(of record: StoredRecord) -> Set<String> {
        guard !record.deleted, mentioned(in: record.fieldsJSON) else { return [] }
        var hashes = Set<String>()
        for value in record.fields().values {
            for asset in value.assets {
                if let hash = Asset.sha256Hex(ofFileChecksum: asset.fileChecksum) { hashes.insert(hash) }
            }
        }
        return hashes
    }
}

extension FieldValue {
    /// Whether the value is or lists an asset, without collecting them (``assets`` makes an
    /// array): asked of every field of every record a modify saves.
    package var holdsAssets: Bool {
        switch self {
        case .asset: return true
        case .list(let type, let values): return type == .asset || values.contains(where: \.holdsAssets)
        default: return false
        }
    }

    /// Whether the value is or lists a reference, without collecting them.
    package var holdsReferences: Bool {
        switch self {
        case .reference: return true
        case .list(let type, let values): return type == .reference || values.contains(where: \.holdsReferences)
        default: return false
        }
    }

    /// The value as a record stores it: assets without receipt or download URL.
    public var storedForm: FieldValue {
        switch self {
        case .asset(let asset): return .asset(asset.stored)
        case .list(let type, let values) where type == .asset: return .list(elementType: type, values.map(\.storedForm))
        default: return self
        }
    }
}
