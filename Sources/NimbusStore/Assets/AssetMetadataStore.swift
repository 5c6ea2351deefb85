import NimbusProtocol

/// The metadata of assets, kept by the engine beside the records that reference them.
///
/// Asset rows say which blobs a database holds; reference rows, written in the same
/// transaction as each record version (``RecordStore/modifyRecords(_:zone:atomic:policy:caller:in:)``,
/// zone deletion), say which records hold them; upload rows say which receipts are valid.
public protocol AssetMetadataStore: Sendable {
    /// Records new upload slots (`assets/upload`).
    func createAssetUploads(_ uploads: [AssetUpload]) async throws

    /// The upload with this id, or `nil`.
    func assetUpload(id: String) async throws -> AssetUpload?

    /// Records that upload `id`'s bytes are stored (under ``AssetUpload/blobKey``) and makes
    /// sure the database's asset row for them exists. Returns the completed upload.
    /// - Throws: BAD_REQUEST when the upload is unknown, expired or already finished.
    func completeAssetUpload(id: String, _ completion: AssetUpload.Completion, now: Int64) async throws -> AssetUpload

    /// The size of the asset with this SHA-256 in `database`, or `nil` when the database
    /// holds no such asset.
    func assetSize(sha256: String, in database: DatabaseKey) async throws -> Int64?

    /// Deletes the rows of what nothing needs any more: uploads expired before `now`, and
    /// assets no record references, no unexpired upload is about to attach, and that are
    /// older than `cutoff`. Returns the blobs and uploads whose rows are gone, for their
    /// bytes to be deleted.
    func collectAssetRows(now: Int64, cutoff: Int64) async throws -> AssetSweepCandidates

    /// Of `candidates`, those that no row knows (bytes left by a crash, or rows collected).
    func unknownAssetFiles(_ candidates: AssetSweepCandidates) async throws -> AssetSweepCandidates

    /// What a database holds, as its quota counts it.
    func usage(of database: DatabaseKey) async throws -> DatabaseUsage
}

/// The bytes a database holds, as a quota counts them: the fields of its live records (as
/// stored), and each asset its live records reference, once however many reference it. A
/// delete frees both at once; unreferenced bytes the collector has yet to reclaim do not count.
public struct DatabaseUsage: Sendable, Equatable {
    /// The UTF-8 bytes of the live records' stored fields.
    public var recordBytes: Int64
    /// The sizes of the distinct assets live records reference.
    public var assetBytes: Int64
    /// What the quota compares.
    public var totalBytes: Int64 { recordBytes + assetBytes }

    public init(recordBytes: Int64, assetBytes: Int64) {
        self.recordBytes = recordBytes
        self.assetBytes = assetBytes
    }

    /// QUOTA_EXCEEDED when a write took the database from `before` to `self`, above `quota`
    /// and larger than before; `nil` when it may commit.
    public func exceeding(_ quota: Int64?, before: DatabaseUsage) -> CloudKitError? {
        guard let quota, totalBytes > quota, totalBytes > before.totalBytes else { return nil }
        return CloudKitError(
            .quotaExceeded,
            "this request would take the database to \(totalBytes) bytes (\(recordBytes) of records, \(assetBytes) of "
                + "assets) and its quota is \(quota) bytes; nothing was written: delete records or assets to free space")
    }
}
