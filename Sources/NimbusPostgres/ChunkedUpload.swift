import NIOCore

/// An upload's request buffers gathered into chunks of `chunkSize` bytes for `asset_chunks`,
/// each stored by `insert` while the next one arrives.
///
/// At most one insert runs at a time, in order, so what is stored is always the upload's
/// first bytes: when the body fails, the insert in flight finishes, the bytes gathered since
/// are stored as a last, shorter chunk, and the client resumes after all of it. When an
/// insert fails, nothing after it is stored (no gap), and its error is thrown.
enum ChunkedUpload {
    /// Stores `chunks` from byte `offset` on; returns the end of what was stored.
    static func store<Chunks: AsyncSequence>(
        _ chunks: Chunks, from offset: Int64, chunkSize: Int, insert: @escaping @Sendable (_ start: Int64, _ bytes: ByteBuffer) async throws -> Void
    ) async throws -> Int64 where Chunks.Element == ByteBuffer {
        // Each insert hands its chunk's buffer back, to gather the chunk after next in: two
        // buffers per upload, reused rather than allocated (and zero-filled) chunk by chunk.
        try await withThrowingTaskGroup(of: (end: Int64, buffer: ByteBuffer).self) { group in
            // The end of what the inserts stored, and of what was handed to them.
            var stored = offset
            var sent = offset
            var pending = ByteBuffer()
            var spare: ByteBuffer?
            var failure: (any Error)?
            do {
                for try await var buffer in chunks {
                    while buffer.readableBytes > 0 {
                        if pending.capacity < chunkSize { pending.reserveCapacity(chunkSize) }
                        let take = min(buffer.readableBytes, chunkSize - pending.readableBytes)
                        var part = buffer.readSlice(length: take)!
                        pending.writeBuffer(&part)
                        guard pending.readableBytes == chunkSize else { continue }
                        // The previous chunk's insert has to finish first.
                        if sent > stored, let done = try await group.next() {
                            stored = done.end
                            spare = done.buffer
                        }
                        let (start, bytes) = (sent, pending)
                        group.addTask {
                            try await insert(start, bytes)
                            return (start + Int64(bytes.readableBytes), bytes)
                        }
                        sent += Int64(bytes.readableBytes)
                        pending = spare ?? ByteBuffer()
                        pending.clear()
                        spare = nil
                    }
                }
            } catch {
                failure = error
            }
            // The insert in flight (its failure is thrown here), then what arrived after it.
            if sent > stored, let done = try await group.next() { stored = done.end }
            if stored == sent, pending.readableBytes > 0 {
                try await insert(sent, pending)
                stored += Int64(pending.readableBytes)
            }
            if let failure { throw failure }
            return stored
        }
    }
}
