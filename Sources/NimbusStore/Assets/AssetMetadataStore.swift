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
}
