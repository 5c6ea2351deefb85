import Crypto
import Foundation
import NimbusCrypto

/// Encrypted asset files on disk, streamed chunk by chunk (a file is never held in memory
/// whole): the plaintext's hash, its ciphertext in a temporary file, and a ciphertext opened
/// into a file (docs/ENCRYPTION.md, "Encrypted assets").
enum AssetFileSealing {
    /// About how many plaintext bytes are sealed or opened at a time (a whole number of
    /// chunks): the writer's buffer, and the work the two lanes below share.
    static let blockBytes = 1 << 20

    /// The SHA-256 of a file's bytes.
    static func digest(of file: URL) throws -> [UInt8] {
        var hasher = SHA256()
        try AssetFile.chunks(of: file, range: 0..<AssetFile.size(of: file), chunkSize: blockBytes) { hasher.update(data: $0) }
        return Array(hasher.finalize())
    }

    /// The ciphertext of `file` under `fileKey`, in a new temporary file (the caller removes
    /// it). The bytes are hashed again as they are sealed: a file that changed since
    /// `digest` was taken is ``NimbusError/Code/assetFileModified`` (and nothing is kept), so a
    /// convergent key never seals two different files.
    ///
    /// Each block is sealed by a child task while this one hashes it (two cores; both only
    /// read the block).
    static func seal(_ file: URL, with fileKey: AssetFileKey, digest: [UInt8]) async throws -> URL {
        let size = try AssetFile.size(of: file)
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-sealed-\(UUID().uuidString)")
        do {
            let writer = try AssetFile.Writer(output, append: false)
            defer { writer.close() }
            try writer.write(AssetSealing.header(for: fileKey))
            var hasher = SHA256()
            let count = AssetSealing.chunkCount(plaintextSize: size, chunkSize: fileKey.chunkSize)
            let chunkSize = fileKey.chunkSize
            var index = 0
            try await blocks(of: file, size: size, blockSize: chunkSize * max(1, blockBytes / chunkSize)) { block in
                let first = index
                async let sealed = sealChunks(of: block, first: first, count: count, with: fileKey)
                hasher.update(data: block)
                try writer.write(try await sealed)
                index += (block.count + chunkSize - 1) / chunkSize
            }
            if size == 0 { try writer.write(AssetSealing.sealChunk(Data(), index: 0, final: true, with: fileKey)) }
            guard Array(hasher.finalize()) == digest else {
                throw NimbusError(
                    .assetFileModified, "the asset's file \(file.path) changed while it was encrypted; save the record again")
            }
            return output
        } catch {
            try? FileManager.default.removeItem(at: output)
            throw error
        }
    }

    /// The chunks of `block`, the first of them chunk `first` of a file of `count` chunks, sealed.
    private static func sealChunks(of block: Data, first: Int, count: Int, with fileKey: AssetFileKey) throws -> [UInt8] {
        let chunkSize = fileKey.chunkSize
        var sealed: [UInt8] = []
        sealed.reserveCapacity(block.count + (block.count / chunkSize + 1) * AssetSealing.tagByteCount)
        var offset = block.startIndex
        var chunk = first
        while offset < block.endIndex {
            let end = min(offset + chunkSize, block.endIndex)
            try AssetSealing.sealChunk(
                block[offset..<end], index: chunk, final: chunk == count - 1, with: fileKey, appendingTo: &sealed)
            offset = end
            chunk += 1
        }
        return sealed
    }

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
