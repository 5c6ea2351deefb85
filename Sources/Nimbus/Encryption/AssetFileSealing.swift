import Crypto
import Foundation
import NimbusCrypto

/// Encrypted asset files of the first format (``AssetSealing``, one convergent key per file),
/// which this version still opens: a downloaded ciphertext opened into a file, streamed chunk
/// by chunk (docs/ENCRYPTION.md, "Encrypted assets"). New files are sealed in the second
/// format (``ChunkSealingSource``, ``ChunkOpener``).
enum AssetFileSealing {
    /// About how many plaintext bytes are sealed or opened at a time (a whole number of
    /// chunks): the writer's buffer, and the work two lanes share.
    static let blockBytes = 1 << 20

    /// Opens the ciphertext in `sealed` into `output` (replaced), chunk by chunk: of each
    /// block, a child task opens the second half while this one opens the first.
    /// - Throws: ``NimbusError/Code/decryptionFailed`` for a file that is not a ciphertext of
    ///   this format, or whose chunks were altered, re-ordered or cut (nothing is left in
    ///   `output`).
    static func open(_ sealed: URL, with key: SymmetricKey, to output: URL) async throws {
        let size = try AssetFile.size(of: sealed)
        do {
            let header = Array(try AssetFile.read(sealed, range: 0..<min(size, Int64(AssetSealing.headerByteCount))))
            let (chunkSize, prefix) = try AssetSealing.header(header)
            guard let plain = AssetSealing.plaintextSize(sealedSize: size, chunkSize: chunkSize) else {
                throw EncryptionError(
                    .authenticationFailed, "the encrypted file has \(size) bytes, which no file of \(chunkSize)-byte chunks seals to: it was cut or padded")
            }
            let layout = SealedLayout(chunkSize: chunkSize, prefix: prefix, count: AssetSealing.chunkCount(plaintextSize: plain, chunkSize: chunkSize))
            let writer = try AssetFile.Writer(output, append: false)
            defer { writer.close() }
            var index = 0
            try await blocks(
                of: sealed, size: size, from: Int64(AssetSealing.headerByteCount),
                blockSize: layout.sealedChunk * max(2, blockBytes / chunkSize)
            ) { block in
                let chunks = (block.count + layout.sealedChunk - 1) / layout.sealedChunk
                let half = (chunks + 1) / 2
                let first = index
                async let second = openChunks(half..<chunks, of: block, first: first, layout, key: key)
                let opened = try openChunks(0..<half, of: block, first: first, layout, key: key)
                let rest = try await second
                try writer.write(opened)
                try writer.write(rest)
                index += chunks
            }
        } catch let error as EncryptionError {
            try? FileManager.default.removeItem(at: output)
            throw NimbusError(.decryptionFailed, "the asset's bytes do not open: \(error.message)")
        } catch {
            try? FileManager.default.removeItem(at: output)
            throw error
        }
    }

    /// How a ciphertext is cut: its chunk size, nonce prefix and number of chunks.
    private struct SealedLayout: Sendable {
        var chunkSize: Int
        var prefix: [UInt8]
        var count: Int
        var sealedChunk: Int { chunkSize + AssetSealing.tagByteCount }
    }

    /// The chunks `range` of `block` (whose first chunk is the file's chunk `first`), opened.
    private static func openChunks(
        _ range: Range<Int>, of block: Data, first: Int, _ layout: SealedLayout, key: SymmetricKey
    ) throws(EncryptionError) -> [UInt8] {
        var opened: [UInt8] = []
        opened.reserveCapacity(range.count * layout.chunkSize)
        for local in range {
            let start = block.startIndex + local * layout.sealedChunk
            try AssetSealing.openChunk(
                block[start..<min(start + layout.sealedChunk, block.endIndex)], index: first + local,
                final: first + local == layout.count - 1, prefix: layout.prefix, key: key, appendingTo: &opened)
        }
        return opened
    }

    /// Reads bytes `start..<size` of `file` in blocks of exactly `blockSize` bytes (the last
    /// may be shorter), whatever the file system hands out at a time.
    static func blocks(
        of file: URL, size: Int64, from start: Int64 = 0, blockSize: Int, _ body: (Data) async throws -> Void
    ) async throws {
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw NimbusError(.assetFileNotFound, "the asset's file \(file.path) cannot be opened for reading")
        }
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(start))
        var remaining = size - start
        while remaining > 0 {
            var block = Data()
            let want = Int(min(Int64(blockSize), remaining))
            while block.count < want {
                let piece = try handle.read(upToCount: want - block.count) ?? Data()
                guard !piece.isEmpty else {
                    throw NimbusError(
                        .assetFileModified, "the asset's file \(file.path) became shorter while it was read; save the record again")
                }
                block.append(piece)
            }
            remaining -= Int64(want)
            try await body(block)
        }
    }
}
