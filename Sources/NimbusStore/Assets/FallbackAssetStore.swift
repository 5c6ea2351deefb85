import NIOCore

/// Asset bytes moving from one store to another while the server serves
/// (`nimbus serve --assets NEW --assets-previous OLD`): everything is written to ``primary``;
/// a blob ``primary`` lacks is read from ``previous``, where it was before the move; deletions
/// reach both. With ``AssetMigration`` copying the rest, no download misses a blob at any
/// point of a move.
public struct FallbackAssetStore: AssetStore {
    public let primary: any AssetStore
    public let previous: any AssetStore

    public init(primary: any AssetStore, previous: any AssetStore) {
        self.primary = primary
        self.previous = previous
    }

    public func uploadedLength(_ id: String) async throws -> Int64 { try await primary.uploadedLength(id) }

    public func appendUpload<Chunks: AsyncSequence>(_ id: String, at offset: Int64, _ chunks: Chunks) async throws -> Int64
    where Chunks.Element == ByteBuffer {
        try await primary.appendUpload(id, at: offset, chunks)
    }

    public func readUpload(_ id: String, _ body: (ByteBuffer) async throws -> Void) async throws {
        try await primary.readUpload(id, body)
    }

    public func commitUpload(_ id: String, as key: AssetBlobKey) async throws { try await primary.commitUpload(id, as: key) }

    public func discardUpload(_ id: String) async throws { try await primary.discardUpload(id) }

    public func size(of key: AssetBlobKey) async throws -> Int64? {
        if let size = try await primary.size(of: key) { return size }
        return try await previous.size(of: key)
    }

    public func read(_ key: AssetBlobKey, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void) async throws {
        if try await primary.size(of: key) != nil {
            try await primary.read(key, range: range, body)
        } else {
            try await previous.read(key, range: range, body)
        }
    }

    public func deleteBlob(_ key: AssetBlobKey, writtenBefore cutoff: Int64?) async throws {
        try await primary.deleteBlob(key, writtenBefore: cutoff)
        try await previous.deleteBlob(key, writtenBefore: cutoff)
    }

    /// The primary's candidates and the previous store's blobs (its uploads are not resumed:
    /// an upload the move interrupted starts again at the primary).
    public func sweepCandidates(olderThan cutoff: Int64) async throws -> AssetSweepCandidates {
        var found = try await primary.sweepCandidates(olderThan: cutoff)
        let before = try await previous.sweepCandidates(olderThan: cutoff)
        found.blobs += before.blobs.filter { !found.blobs.contains($0) }
        return found
    }

    /// None while a move runs: the blob may still be in the previous store only, so the server
    /// streams it from wherever it is.
    public func redirectURL(for key: AssetBlobKey, lifetime: Duration) throws -> String? { nil }
}
