import NIOCore
import NimbusProtocol
import NimbusStore
import PostgresNIO

/// Asset bytes in PostgreSQL itself, so every node of a deployment reads what any node
/// stored: `asset_chunks` rows of at most ``AssetBlobKey/chunkSize`` (1 MiB) of `bytea`
/// (``chunkBytes`` for new uploads),
/// keyed by the blob (`upload:<id>` while an upload arrives, then its content address) and
/// the chunk's first byte offset.
///
/// An upload's bytes are gathered into chunks and each is inserted by its own statement while
/// the next one arrives (``ChunkedUpload``): an interrupted upload keeps every byte that
/// arrived, and a resumed one continues after them; committing an upload renames its chunks
/// in one transaction. A read fetches one chunk at a time, the next while the current one is
/// sent. The limits: every byte goes through the database's
/// WAL and backups, and a 50 MB asset is 50 rows; for large volumes use a shared directory
/// (``FileAssetStore``) or an S3-compatible bucket (`S3AssetStore`, module `NimbusObjectStore`).
public struct PostgresAssetStore: AssetStore {
    let store: PostgresStore

    public init(store: PostgresStore) {
        self.store = store
    }

    static func uploadBlob(_ id: String) -> String { "upload:" + id }

    /// The bytes of each chunk an upload stores: 4 KiB short of ``AssetBlobKey/chunkSize``, so
    /// that the statement inserting it (the chunk and its other parameters, then the whole
    /// message) fits the 1 MiB buffers postgres-nio copies it into. At 1 MiB exactly each copy
    /// needed a 2 MiB buffer: half again the memory per upload, and more page faults. Reads
    /// take chunks of any size, so uploads stored before keep working.
    static let chunkBytes = AssetBlobKey.chunkSize - 4096

    /// The first key of the advisory lock a commit takes on its blob ("asst" in ASCII); the
    /// second is a hash of the blob's key.
    static let commitLockKey: Int32 = 0x6173_7374

    public func uploadedLength(_ id: String) async throws -> Int64 {
        try await store.rows(
            "SELECT COALESCE(sum(length(bytes)), 0)::int8 FROM asset_chunks WHERE blob = \(Self.uploadBlob(id))"
        ).first?.decode(Int64.self) ?? 0
    }

    public func appendUpload<Chunks: AsyncSequence>(_ id: String, at offset: Int64, _ chunks: Chunks) async throws
        -> Int64
    where Chunks.Element == ByteBuffer {
        let blob = Self.uploadBlob(id)
        if offset == 0 {
            try await store.rows("DELETE FROM asset_chunks WHERE blob = \(blob)")
        } else {
            let held = try await uploadedLength(id)
            guard held == offset else {
                throw CloudKitError(
                    .badRequest, "upload \(id) holds \(held) bytes; continue at that offset (or 0), not \(offset)")
            }
        }
        let store = self.store
        return try await ChunkedUpload.store(chunks, from: offset, chunkSize: Self.chunkBytes) { start, bytes in
            try await store.rows(
                """
                INSERT INTO asset_chunks (blob, start, bytes, written_at)
                VALUES (\(blob), \(start), \(bytes), \(store.clock.nowMillis()))
                """)
        }
    }

    public func readUpload(_ id: String, _ body: (ByteBuffer) async throws -> Void) async throws {
        try await readChunks(of: Self.uploadBlob(id), range: 0..<Int64.max, body)
    }

    public func commitUpload(_ id: String, as key: AssetBlobKey) async throws {
        let blob = key.description
        let now = store.clock.nowMillis()
        try await store.transaction { transaction in
            // Two uploads of the same bytes committing at once would both find no blob and
            // both rename into it (a primary-key violation): one at a time per blob.
            try await transaction.rows("SELECT pg_advisory_xact_lock(\(Self.commitLockKey), hashtext(\(blob)))")
            try await transaction.rows("DELETE FROM asset_chunks WHERE blob = \(blob)")
            try await transaction.rows(
                "UPDATE asset_chunks SET blob = \(blob), written_at = \(now) WHERE blob = \(Self.uploadBlob(id))")
        }
    }

    public func discardUpload(_ id: String) async throws {
        try await store.rows("DELETE FROM asset_chunks WHERE blob = \(Self.uploadBlob(id))")
    }

    public func size(of key: AssetBlobKey) async throws -> Int64? {
        let row = try await store.rows(
            "SELECT count(*)::int8, COALESCE(sum(length(bytes)), 0)::int8 FROM asset_chunks WHERE blob = \(key.description)"
        ).first
        guard let (count, size) = try row?.decode((Int64, Int64).self), count > 0 else { return nil }
        return size
    }

    public func read(_ key: AssetBlobKey, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void) async throws {
        try await readChunks(of: key.description, range: range, body)
    }

    /// Hands `body` the chunks of `blob` that overlap `range`, each a slice of the row's
    /// `bytea` as it came from the connection (no copy). The next chunk's `SELECT` runs while
    /// `body` sends the current one (to a client: the usual wait of a download).
    private func readChunks(of blob: String, range: Range<Int64>, _ body: (ByteBuffer) async throws -> Void) async throws {
        let store = self.store
        try await withThrowingTaskGroup(of: PostgresRow?.self) { group in
            // The chunk holding the range's first byte, then each next one.
            group.addTask {
                try await store.rows(
                    """
                    SELECT start, bytes FROM asset_chunks WHERE blob = \(blob) AND start <= \(range.lowerBound)
                    ORDER BY start DESC LIMIT 1
                    """
                ).first
            }
            var position = range.lowerBound
            var found = false
            while let next = try await group.next(), let row = next {
                found = true
                let (start, chunk) = try row.decode((Int64, ByteBuffer).self)
                let end = start + Int64(chunk.readableBytes)
                let from = Int(position - start)
                let to = Int(min(end, range.upperBound) - start)
                guard from >= 0, from < to, let slice = chunk.getSlice(at: chunk.readerIndex + from, length: to - from) else {
                    break
                }
                position = start + Int64(to)
                if position < range.upperBound {
                    group.addTask {
                        try await store.rows("SELECT start, bytes FROM asset_chunks WHERE blob = \(blob) AND start = \(end)")
                            .first
                    }
                }
                try await body(slice)
            }
            if !found && range.lowerBound > 0 {
                throw CloudKitError(.notFound, "the asset's bytes are no longer stored")
            }
        }
    }

    public func deleteBlob(_ key: AssetBlobKey, writtenBefore cutoff: Int64?) async throws {
        let blob = key.description
        guard let cutoff else {
            try await store.rows("DELETE FROM asset_chunks WHERE blob = \(blob)")
            return
        }
        try await store.rows(
            """
            DELETE FROM asset_chunks WHERE blob = \(blob)
              AND NOT EXISTS (SELECT 1 FROM asset_chunks WHERE blob = \(blob) AND written_at >= \(cutoff))
            """)
    }

    public func sweepCandidates(olderThan cutoff: Int64) async throws -> AssetSweepCandidates {
        var found = AssetSweepCandidates()
        for row in try await store.rows(
            "SELECT blob FROM asset_chunks GROUP BY blob HAVING max(written_at) < \(cutoff)")
        {
            let blob = try row.decode(String.self)
            if blob.hasPrefix("upload:") {
                found.uploads.append(String(blob.dropFirst("upload:".count)))
            } else if let key = AssetBlobKey(blob) {
                found.blobs.append(key)
            }
        }
        return found
    }
}
