import Foundation
import Nimbus
import NimbusProtocol

/// Identifies one asset file a pending save carries: the record's field and the local file.
struct AssetUploadKey: Sendable, Hashable {
    var recordName: String
    var field: String
    /// The local file's path.
    var file: String
}

/// How far the upload of one asset file got, as the local store keeps it across launches.
struct AssetUploadState: Sendable, Equatable {
    /// The upload URL `assets/upload` answered (bytes may already be on the server).
    var url: URL?
    /// The upload's answer, with the receipt that attaches it to the record.
    var uploaded: Nimbus.Asset?
    /// The encrypted-asset format the upload began in (kept with its URL): a resumed upload
    /// continues in it, whatever the build that resumes it writes.
    var format: UInt8?
}

/// The next step of an asset file's upload.
enum AssetStep: Sendable, Equatable {
    /// Ask `assets/upload` for an upload URL (and keep it before sending a byte).
    case requestURL(AssetUploadKey)
    /// Send the bytes; `resuming` when an earlier run may have sent some (ask the server first),
    /// in the encrypted-asset `format` the upload began in.
    case upload(AssetUploadKey, url: URL, resuming: Bool, format: UInt8? = nil)
    /// Uploaded: its receipt goes into the save.
    case ready(AssetUploadKey, Nimbus.Asset)
}

/// One file of the on-disk asset cache.
struct CachedAsset: Sendable, Equatable {
    var checksum: String
    var size: Int64
    /// Milliseconds since the epoch of the last time the app asked for it.
    var lastUsed: Int64
}

/// The asset decisions, free of I/O: what to upload before a save, what a save sends,
/// which cached files to evict, which assets to prefetch.
enum AssetPlanner {
    // MARK: - Uploads

    /// The local files `record`'s save sends (`record` as ``SyncPlanner/outgoing(_:copy:)``
    /// built it: only its changed keys go out).
    static func localFiles(of record: Nimbus.Record) -> [AssetUploadKey] {
        record.changedKeys.flatMap { field in
            (record.fieldValue(forKey: field)?.localAssetFiles ?? []).map {
                AssetUploadKey(recordName: record.id.recordName, field: field, file: $0.path)
            }
        }
    }

    /// The next step for each file `record`'s save carries, given what the store knows of
    /// their uploads. A file is never sent twice in full: once a URL was kept, the upload
    /// resumes from what the server holds.
    static func steps(for record: Nimbus.Record, known: [AssetUploadKey: AssetUploadState]) -> [AssetStep] {
        localFiles(of: record).map { key in
            switch known[key] {
            case let state? where state.uploaded != nil: return .ready(key, state.uploaded!)
            case let state? where state.url != nil: return .upload(key, url: state.url!, resuming: true, format: state.format)
            default: return .requestURL(key)
            }
        }
    }

    /// `record` with each local file replaced by its upload (whose receipt attaches it);
    /// `nil` when a file of it is not uploaded: a record is never sent without its assets.
    static func withReceipts(_ record: Nimbus.Record, uploads: [AssetUploadKey: Nimbus.Asset]) -> Nimbus.Record? {
        var copy = record
        var complete = true
        for field in record.changedKeys {
            guard let value = record.fieldValue(forKey: field), !value.localAssetFiles.isEmpty else { continue }
            let replaced = value.mappingSDKAssets { asset in
                guard let file = asset.fileURL else { return asset }
                guard let uploaded = uploads[AssetUploadKey(recordName: record.id.recordName, field: field, file: file.path)]
                else {
                    complete = false
                    return asset
                }
                return uploaded
            }
            copy.setFieldValue(replaced, forKey: field)
        }
        return complete ? copy : nil
    }

    // MARK: - The cache

    /// The cached files to evict so the cache holds at most `bound` bytes: least recently
    /// used first, never a pinned one (a file a pending change still needs).
    static func evictions(_ entries: [CachedAsset], bound: Int64, pinned: Set<String>) -> [String] {
        var total = entries.reduce(Int64(0)) { $0 + $1.size }
        var evicted: [String] = []
        for entry in entries.sorted(by: { ($0.lastUsed, $0.checksum) < ($1.lastUsed, $1.checksum) }) {
            guard total > bound else { break }
            if pinned.contains(entry.checksum) { continue }
            evicted.append(entry.checksum)
            total -= entry.size
        }
        return evicted
    }

    /// The assets of `records` to prefetch, in the records' order (the app's priority): each
    /// server asset of the named `fields` (all fields when `nil`) smaller than `maxBytes` and
    /// not cached yet, once per file.
    static func prefetch(
        _ records: [LocalRecord], fields: Set<String>?, smallerThan maxBytes: Int64, cached: Set<String>
    ) -> [(record: LocalRecord, field: String, asset: Nimbus.Asset)] {
        var seen = cached
        var result: [(record: LocalRecord, field: String, asset: Nimbus.Asset)] = []
        for record in records {
            for field in record.fields.keys.sorted() where fields?.contains(field) ?? true {
                for asset in record.fields[field]?.sdkAssets ?? [] {
                    guard asset.fileURL == nil, let checksum = asset.fileChecksum, let size = asset.size, size < maxBytes,
                        seen.insert(checksum).inserted
                    else { continue }
                    result.append((record, field, asset))
                }
            }
        }
        return result
    }

    /// The cache's file name for a checksum (base64 made safe for file names).
    static func fileName(checksum: String) -> String {
        String(checksum.map { $0 == "/" ? "_" : $0 == "+" ? "-" : $0 == "=" ? "." : $0 })
    }

    /// The checksum a cache file is named for (``fileName(checksum:)`` undone).
    static func checksum(fileName: String) -> String {
        String(fileName.map { $0 == "_" ? "/" : $0 == "-" ? "+" : $0 == "." ? "=" : $0 })
    }

    /// `fields` for a record sent again to a zone the server lost (deleted, or wiped with
    /// its asset bytes): each server asset whose bytes are in the cache (`cachedFile` gives
    /// the file) becomes a local file uploaded again before the save; the others stay (the
    /// server may still hold them; if not, the save fails and says so).
    static func reuploading(
        _ fields: [String: FieldValue], cachedFile: (String) -> URL?
    ) -> [String: FieldValue] {
        fields.mapValues { value in
            value.mappingSDKAssets { asset in
                guard asset.fileURL == nil, let checksum = asset.fileChecksum, let file = cachedFile(checksum) else {
                    return asset
                }
                return Nimbus.Asset(fileURL: file)
            }
        }
    }
}
