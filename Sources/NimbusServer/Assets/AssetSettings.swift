/// How the server takes, serves and reclaims asset bytes. Every value has a default.
public struct AssetSettings: Sendable {
    /// The largest asset accepted, in bytes (CloudKit's 50 MB by default). The upload URL's
    /// body limit is this, not ``ServerConfiguration/maxBodyBytes``.
    public var maxAssetBytes: Int64
    /// How long an upload URL takes bytes, and its receipt attaches them to a record. Bytes
    /// never saved are reclaimed after this.
    public var uploadLifetime: Duration
    /// How long a `downloadURL` handed out by a read stays valid.
    public var downloadLifetime: Duration
    /// How often the collector runs.
    public var collectionInterval: Duration
    /// How old an unreferenced asset, or bytes no row knows (a crash between storing and
    /// recording them), must be before the collector deletes them.
    public var gracePeriod: Duration
    /// Where asset bytes live. `nil`: under the data directory in SQLite mode (`DIR/assets`),
    /// in PostgreSQL itself in PostgreSQL mode.
    public var directory: String?

    public init(
        maxAssetBytes: Int64 = 50 * 1000 * 1000, uploadLifetime: Duration = .seconds(24 * 3600),
        downloadLifetime: Duration = .seconds(3600), collectionInterval: Duration = .seconds(600),
        gracePeriod: Duration = .seconds(3600), directory: String? = nil
    ) {
        self.maxAssetBytes = maxAssetBytes
        self.uploadLifetime = uploadLifetime
        self.downloadLifetime = downloadLifetime
        self.collectionInterval = collectionInterval
        self.gracePeriod = gracePeriod
        self.directory = directory
    }
}
