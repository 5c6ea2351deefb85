import Foundation
import GRDB
import Nimbus
import NimbusProtocol

/// The asset tables: upload progress of pending saves, and the download cache's index.
extension StoreTransaction {
    // MARK: - Uploads

    /// What the store knows of the uploads of `zone`'s records `names`.
    func assetUploads(zone: String, names: [String]) throws -> [AssetUploadKey: AssetUploadState] {
        var result: [AssetUploadKey: AssetUploadState] = [:]
        for name in names {
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT field, file, url, uploaded, format FROM nimbus_asset_uploads WHERE zone = ? AND name = ?"),
                arguments: [zone, name])
            for row in rows {
                let key = AssetUploadKey(recordName: name, field: row["field"], file: row["file"])
                let uploadedText: String? = row["uploaded"]
                let uploaded = try uploadedText.map { text -> Nimbus.Asset in
                    guard let asset = Nimbus.Asset(fieldValue: .asset(try NimbusProtocol.Asset(wire: WireReader(JSON.parse(text)))))
                    else { throw NimbusError(.internalError, "a stored upload is not an asset") }
                    return asset
                }
                result[key] = AssetUploadState(
                    url: (row["url"] as String?).flatMap(URL.init(string:)), uploaded: uploaded, format: row["format"])
            }
        }
        return result
    }

    /// Keeps an upload URL for a file, before any of its bytes are sent, with the
    /// encrypted-asset format this build seals it in.
    func setUploadURL(_ url: URL, zone: String, key: AssetUploadKey) throws {
        try db.execute(
            sql: """
                INSERT INTO nimbus_asset_uploads (zone, name, field, file, url, format) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(zone, name, field, file) DO UPDATE SET url = excluded.url, format = excluded.format, uploaded = NULL
                """,
            arguments: [zone, key.recordName, key.field, key.file, url.absoluteString, Nimbus.Database.currentAssetFormat])
    }

    /// Keeps an upload's answer (its receipt goes into the save).
    func setUploaded(_ asset: Nimbus.Asset, zone: String, key: AssetUploadKey) throws {
        guard case .asset(let value) = asset.fieldValue else { return }
        try db.execute(
            sql: "UPDATE nimbus_asset_uploads SET uploaded = ? WHERE zone = ? AND name = ? AND field = ? AND file = ?",
            arguments: [value.wireJSON.serialized(), zone, key.recordName, key.field, key.file])
    }

    /// Forgets a record's uploads (their receipts were spent by a save, or refused).
    func forgetUploads(zone: String, name: String) throws {
        try db.execute(sql: "DELETE FROM nimbus_asset_uploads WHERE zone = ? AND name = ?", arguments: [zone, name])
    }

    // MARK: - The cache

    func cachedAssets() throws -> [CachedAsset] {
        try Row.fetchAll(db, sql: "SELECT checksum, size, last_used FROM nimbus_asset_cache").map {
            CachedAsset(checksum: $0["checksum"], size: $0["size"], lastUsed: $0["last_used"])
        }
    }

    func cachedAsset(_ checksum: String) throws -> CachedAsset? {
        try Row.fetchOne(
            db, sql: "SELECT checksum, size, last_used FROM nimbus_asset_cache WHERE checksum = ?", arguments: [checksum]
        ).map { CachedAsset(checksum: $0["checksum"], size: $0["size"], lastUsed: $0["last_used"]) }
    }

    /// Records a cached file, or that it was used now.
    func touchCachedAsset(_ checksum: String, size: Int64) throws {
        try db.execute(
            sql: """
                INSERT INTO nimbus_asset_cache (checksum, size, last_used) VALUES (?, ?, ?)
                ON CONFLICT(checksum) DO UPDATE SET last_used = excluded.last_used, size = excluded.size
                """,
            arguments: [checksum, size, Int64(now().timeIntervalSince1970 * 1000)])
    }

    func removeCachedAsset(_ checksum: String) throws {
        try db.execute(sql: "DELETE FROM nimbus_asset_cache WHERE checksum = ?", arguments: [checksum])
    }

    /// The checksums of the server assets pending changes hold: their cached files stay.
    func pinnedAssetChecksums() throws -> Set<String> {
        var pinned = Set<String>()
        for text in try String.fetchAll(db, sql: "SELECT fields FROM nimbus_outbox WHERE kind = 'save'") {
            for value in try [String: FieldValue](jsonText: text).values {
                for asset in value.assets {
                    if asset.fileChecksum != Nimbus.Asset.localFileChecksum {
                        pinned.insert(asset.fileChecksum)
                    } else if let file = asset.downloadURL.flatMap(URL.init(string:)) {
                        // A cached file queued for upload again (a lost zone): kept until sent.
                        pinned.insert(AssetPlanner.checksum(fileName: file.lastPathComponent))
                    }
                }
            }
        }
        return pinned
    }
}
