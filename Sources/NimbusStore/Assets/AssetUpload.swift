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

