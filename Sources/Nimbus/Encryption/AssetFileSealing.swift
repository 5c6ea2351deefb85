import Crypto
import Foundation
import NimbusCrypto

/// Encrypted asset files on disk, streamed chunk by chunk (a file is never held in memory
/// whole): the plaintext's hash, its ciphertext in a temporary file, and a ciphertext opened
/// into a file (docs/ENCRYPTION.md, "Encrypted assets").
enum AssetFileSealing {
    /// How many bytes the writer gathers before it writes them.
    static let writeBuffer = 1 << 20

    /// The SHA-256 of a file's bytes.
    static func digest(of file: URL) throws -> [UInt8] {
        var hasher = SHA256()
        try AssetFile.chunks(of: file, range: 0..<AssetFile.size(of: file)) { hasher.update(data: $0) }
        return Array(hasher.finalize())
    }

    /// The ciphertext of `file` under `fileKey`, in a new temporary file (the caller removes
    /// it). The bytes are hashed again as they are sealed: a file that changed since
    /// `digest` was taken is ``NimbusError/Code/assetFileModified`` (and nothing is kept), so a
    /// convergent key never seals two different files.
    static func seal(_ file: URL, with fileKey: AssetFileKey, digest: [UInt8]) throws -> URL {
        let size = try AssetFile.size(of: file)
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-sealed-\(UUID().uuidString)")
        do {
            let writer = try AssetFile.Writer(output, append: false)
            defer { writer.close() }
            var buffer = Data(AssetSealing.header(for: fileKey))
            var hasher = SHA256()
            let count = AssetSealing.chunkCount(plaintextSize: size, chunkSize: fileKey.chunkSize)
            var index = 0
            try exactChunks(of: file, size: size, chunkSize: fileKey.chunkSize) { chunk in
                hasher.update(data: chunk)
                buffer.append(contentsOf: try AssetSealing.sealChunk(chunk, index: index, final: index == count - 1, with: fileKey))
                index += 1
                if buffer.count >= writeBuffer {
                    try writer.write(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            if size == 0 { buffer.append(contentsOf: try AssetSealing.sealChunk(Data(), index: 0, final: true, with: fileKey)) }
            try writer.write(buffer)
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

    /// Opens the ciphertext in `sealed` into `output` (replaced), chunk by chunk.
    /// - Throws: ``NimbusError/Code/decryptionFailed`` for a file that is not a ciphertext of
    ///   this format, or whose chunks were altered, re-ordered or cut (nothing is left in
    ///   `output`).
    static func open(_ sealed: URL, with key: SymmetricKey, to output: URL) throws {
        let size = try AssetFile.size(of: sealed)
        do {
            let header = Array(try AssetFile.read(sealed, range: 0..<min(size, Int64(AssetSealing.headerByteCount))))
            let (chunkSize, prefix) = try AssetSealing.header(header)
            guard let plain = AssetSealing.plaintextSize(sealedSize: size, chunkSize: chunkSize) else {
                throw EncryptionError(
                    .authenticationFailed, "the encrypted file has \(size) bytes, which no file of \(chunkSize)-byte chunks seals to: it was cut or padded")
            }
            let count = AssetSealing.chunkCount(plaintextSize: plain, chunkSize: chunkSize)
            let writer = try AssetFile.Writer(output, append: false)
            defer { writer.close() }
            var buffer = Data()
            var index = 0
            try exactChunks(
                of: sealed, size: size, from: Int64(AssetSealing.headerByteCount), chunkSize: chunkSize + AssetSealing.tagByteCount
            ) { chunk in
                buffer.append(contentsOf: try AssetSealing.openChunk(
                    Array(chunk), index: index, final: index == count - 1, prefix: prefix, key: key))
                index += 1
                if buffer.count >= writeBuffer {
                    try writer.write(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            try writer.write(buffer)
        } catch let error as EncryptionError {
            try? FileManager.default.removeItem(at: output)
            throw NimbusError(.decryptionFailed, "the asset's bytes do not open: \(error.message)")
        } catch {
            try? FileManager.default.removeItem(at: output)
            throw error
        }
    }

    /// Reads bytes `start..<size` of `file` in pieces of exactly `chunkSize` bytes (the last
    /// may be shorter), whatever the file system hands out at a time.
    static func exactChunks(
        of file: URL, size: Int64, from start: Int64 = 0, chunkSize: Int, _ body: (Data) throws -> Void
    ) throws {
        var pending = Data()
        try AssetFile.chunks(of: file, range: start..<size, chunkSize: max(chunkSize, 256 << 10)) { data in
            pending.append(data)
            var offset = pending.startIndex
            while pending.endIndex - offset >= chunkSize {
                try body(pending[offset..<offset + chunkSize])
                offset += chunkSize
            }
            pending.removeSubrange(pending.startIndex..<offset)
        }
        if !pending.isEmpty { try body(pending) }
    }
}
