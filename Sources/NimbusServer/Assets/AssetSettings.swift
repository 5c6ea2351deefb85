import NimbusStore

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
    /// Where asset bytes live (`nimbus serve --assets`): by default under the data directory
    /// in SQLite mode (`DIR/assets`), in PostgreSQL itself in PostgreSQL mode.
    public var location: AssetLocation
    /// Where asset bytes were before a move to ``location`` (`--assets-previous`): a blob
    /// ``location`` lacks is read from there until `nimbus assets migrate` has copied it.
    public var previousLocation: AssetLocation?
    /// Whether a download URL answers `307` to the object store's own pre-signed URL (valid for
    /// ``redirectLifetime``) instead of streaming the bytes through the server, when the store
    /// has such URLs (`--asset-download-redirect`). The download token and the asset's row are
    /// checked first, as for a streamed download.
    public var redirectDownloads: Bool

    /// How long a pre-signed URL a download redirects to stays valid: the client follows it at
    /// once, and a later resume asks the download URL again (which checks again).
    public var redirectLifetime: Duration { min(downloadLifetime, .seconds(900)) }

    public init(
        maxAssetBytes: Int64 = 50 * 1000 * 1000, uploadLifetime: Duration = .seconds(24 * 3600),
        downloadLifetime: Duration = .seconds(3600), collectionInterval: Duration = .seconds(600),
        gracePeriod: Duration = .seconds(3600), location: AssetLocation = .engineDefault, redirectDownloads: Bool = false
    ) {
        self.maxAssetBytes = maxAssetBytes
        self.uploadLifetime = uploadLifetime
        self.downloadLifetime = downloadLifetime
        self.collectionInterval = collectionInterval
        self.gracePeriod = gracePeriod
        self.location = location
        self.previousLocation = nil
        self.redirectDownloads = redirectDownloads
    }
}
