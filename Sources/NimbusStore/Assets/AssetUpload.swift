import NimbusProtocol

/// One upload slot handed out by `assets/upload`: what the bytes sent to its URL may be
/// attached to (the user, database, zone, record and field it was issued for), until when,
/// and, once the bytes are stored, their checksum, size and the receipt that proves it.
public struct AssetUpload: Sendable, Equatable {
    /// Random, unguessable; names the upload's bytes in the ``AssetStore`` while they arrive.
    public var id: String
    public var database: DatabaseKey
    /// The user record name of the user who asked for the upload.
    public var userRecordName: String
    public var zone: String
    public var recordName: String
    public var recordType: String?
    public var fieldName: String
    /// Milliseconds since the epoch.
    public var createdAt: Int64
    /// After this (milliseconds since the epoch) the URL takes no bytes and the receipt
    /// attaches nothing; the collector reclaims what was never saved.
    public var expiresAt: Int64
    /// Set once the bytes are stored.
    public var completion: Completion?
    /// The receipt was spent by a save.
    public var used: Bool

    /// What a finished upload stored.
    public struct Completion: Sendable, Equatable {
        /// The SHA-256 of the bytes, as lowercase hex.
        public var sha256: String
        public var size: Int64
        public var receipt: String

        public init(sha256: String, size: Int64, receipt: String) {
            self.sha256 = sha256
            self.size = size
            self.receipt = receipt
        }
    }

    public init(
        id: String, database: DatabaseKey, userRecordName: String, zone: String, recordName: String,
        recordType: String?, fieldName: String, createdAt: Int64, expiresAt: Int64, completion: Completion? = nil,
        used: Bool = false
    ) {
        self.id = id
        self.database = database
        self.userRecordName = userRecordName
        self.zone = zone
        self.recordName = recordName
        self.recordType = recordType
        self.fieldName = fieldName
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.completion = completion
        self.used = used
    }

    /// The blob the finished upload's bytes are stored as.
    public var blobKey: AssetBlobKey? {
        completion.map { AssetBlobKey(database: database, sha256: $0.sha256) }
    }

    /// The `singleFile` dictionary the upload answers.
    public var singleFile: Asset? {
        completion.map { Asset(fileChecksum: Asset.fileChecksum(sha256Hex: $0.sha256), size: $0.size, receipt: $0.receipt) }
    }
}

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
