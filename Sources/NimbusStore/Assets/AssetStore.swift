import NIOCore
import NimbusProtocol

/// Where asset bytes live: the one seam for them (files in a directory, chunks in PostgreSQL,
/// objects in an S3-compatible bucket).
///
/// Bytes arrive as *uploads*, named by the upload's id, appended at an offset so an
/// interrupted upload resumes from what the store already has. A finished upload is
/// committed under its content address (``AssetBlobKey``): the same bytes uploaded twice to
/// one database are stored once. The metadata (which blobs exist, which records reference
/// them, which receipts are valid) is not kept here but in the engine's tables; a blob no
/// row knows is reclaimed by the collector once older than its grace period
/// (``sweepCandidates(olderThan:)``), so a crash between storing bytes and recording them
/// leaks nothing for good.
///
/// Bytes cross the seam as `ByteBuffer`s, the buffers the HTTP server reads requests into
/// and writes answers from (and PostgreSQL's `bytea`): a store writes a request's buffers
/// where they belong and hands out buffers it read, without copying them into arrays.
public protocol AssetStore: Sendable {
    /// How many bytes of upload `id` the store holds (0 when it has none). An upload resumes
    /// at this offset.
    func uploadedLength(_ id: String) async throws -> Int64

    /// Appends `chunks` to upload `id` starting at `offset`, which must be 0 (start over) or
    /// ``uploadedLength(_:)``. Returns the upload's length after the last chunk stored; when
    /// `chunks` throws, every byte that arrived before stays (the client resumes after it,
    /// wherever the store cuts its chunks) and the error is rethrown.
    func appendUpload<Chunks: AsyncSequence>(_ id: String, at offset: Int64, _ chunks: Chunks) async throws -> Int64
    where Chunks.Element == ByteBuffer

    /// Reads upload `id` from the start, in order (to checksum a resumed upload).
    func readUpload(_ id: String, _ body: (ByteBuffer) async throws -> Void) async throws

    /// Moves upload `id` to `key` (replacing a blob with the same content, which refreshes
    /// its age); the upload's bytes are gone afterwards.
    func commitUpload(_ id: String, as key: AssetBlobKey) async throws

    /// Forgets upload `id`'s bytes (none is fine).
    func discardUpload(_ id: String) async throws

    /// The length of blob `key`, or `nil` when the store does not hold it.
    func size(of key: AssetBlobKey) async throws -> Int64?

    /// Reads `range` of blob `key` in order, handing `body` chunks of at most
    /// ``AssetBlobKey/chunkSize`` bytes. Throws NOT_FOUND when the blob is gone.
    func read(_ key: AssetBlobKey, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void) async throws

    /// Deletes blob `key` (a missing one is fine). With `cutoff`, only when it was last
    /// written before it (milliseconds since the epoch): the collector's check for bytes no
    /// row knows, made again at the moment of deletion, so that a blob an upload has just
    /// committed again (which refreshes its age) is kept.
    func deleteBlob(_ key: AssetBlobKey, writtenBefore cutoff: Int64?) async throws

    /// The blobs and uploads last written before `cutoff` (milliseconds since the epoch): what
    /// the collector checks against the engine's rows.
    func sweepCandidates(olderThan cutoff: Int64) async throws -> AssetSweepCandidates

    /// A URL that serves blob `key` itself for `lifetime` (an object store's pre-signed URL),
    /// which a download may redirect to once its own authorisation passed; `nil` when the
    /// store has none (the server streams the bytes). The URL is built from `key` and the
    /// store's own configuration only.
    func redirectURL(for key: AssetBlobKey, lifetime: Duration) throws -> String?
}

extension AssetStore {
    /// No store-served URL: the server streams the bytes.
    public func redirectURL(for key: AssetBlobKey, lifetime: Duration) throws -> String? { nil }
}

/// What ``AssetStore/sweepCandidates(olderThan:)`` found.
public struct AssetSweepCandidates: Sendable, Equatable {
    /// Committed blobs, by content address.
    public var blobs: [AssetBlobKey]
    /// Uploads in progress, by upload id.
    public var uploads: [String]

    public init(blobs: [AssetBlobKey] = [], uploads: [String] = []) {
        self.blobs = blobs
        self.uploads = uploads
    }
}
