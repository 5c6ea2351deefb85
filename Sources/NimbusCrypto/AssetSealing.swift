import Crypto
import Foundation

/// Encrypted files, version 1 (still read; new files are ``AssetChunks``): an asset's bytes in chunks, one key per file (docs/ENCRYPTION.md,
/// "Asset format"), so that ranged downloads and resumed uploads work on ciphertext: chunk
/// `i` of the plaintext is bytes `header + i × (chunkSize + 16)` onward of the ciphertext.
///
/// Header: `version (1) ‖ chunk size (4, big-endian) ‖ nonce prefix (4)`; then each chunk is
/// AES-256-GCM with nonce `prefix ‖ index (8)` and associated data `index ‖ final flag`, so a
/// chunk moved, dropped or cut off at the end does not authenticate. The file key
/// (``AssetFileKey``) travels wrapped by the zone key in the asset dictionary's `wrappingKey`
/// (``WrappedAssetKey``).
///
/// ```swift
/// let fileKey = SymmetricKey(size: .bits256)
/// let ciphertext = try AssetSealing.seal(photoBytes, with: fileKey)
/// let photo = try AssetSealing.open(ciphertext, with: fileKey)
/// ```
public enum AssetSealing {
    static let version: UInt8 = 1
    public static let defaultChunkSize = 64 << 10
    public static let headerByteCount = 9
    public static let tagByteCount = 16

    /// The ciphertext of `plaintext` under `fileKey`.
    public static func seal(_ plaintext: [UInt8], with fileKey: SymmetricKey, chunkSize: Int = defaultChunkSize) throws
        -> [UInt8]
    {
        precondition(chunkSize > 0 && chunkSize <= 1 << 24, "chunk size out of range")
        let prefix = (0..<4).map { _ in UInt8.random(in: 0...255) }
        var output: [UInt8] = [version] + bigEndian(UInt32(chunkSize)) + prefix
        let count = max(1, (plaintext.count + chunkSize - 1) / chunkSize)
        output.reserveCapacity(headerByteCount + plaintext.count + count * tagByteCount)
        for index in 0..<count {
            let start = index * chunkSize
            let chunk = plaintext[start..<min(start + chunkSize, plaintext.count)]
            let box = try AES.GCM.seal(
                chunk, using: fileKey, nonce: try nonce(prefix, index), authenticating: aad(index, final: index == count - 1))
            output += box.ciphertext
            output += box.tag
        }
        return output
    }

    /// The ciphertext of `plaintext` under a file key with its own nonce prefix and chunk size
    /// (a convergent ``AssetFileKey``: the same bytes give the same ciphertext).
    public static func seal(_ plaintext: [UInt8], with fileKey: AssetFileKey) throws -> [UInt8] {
        let count = chunkCount(plaintextSize: Int64(plaintext.count), chunkSize: fileKey.chunkSize)
        var output = header(for: fileKey)
        output.reserveCapacity(headerByteCount + plaintext.count + count * tagByteCount)
        for index in 0..<count {
            let start = index * fileKey.chunkSize
            output += try sealChunk(
                plaintext[start..<min(start + fileKey.chunkSize, plaintext.count)], index: index, final: index == count - 1,
                with: fileKey)
        }
        return output
    }

    /// The header a ciphertext under `fileKey` starts with.
    public static func header(for fileKey: AssetFileKey) -> [UInt8] {
        [version] + bigEndian(UInt32(fileKey.chunkSize)) + fileKey.noncePrefix
    }

    /// Chunk `index` of a file (at most `fileKey.chunkSize` bytes; `final` for the file's last
    /// chunk), sealed: its ciphertext and tag, as a streaming writer appends it after the
    /// ``header(for:)``.
    public static func sealChunk(_ chunk: some DataProtocol, index: Int, final: Bool, with fileKey: AssetFileKey) throws
        -> [UInt8]
    {
        var output: [UInt8] = []
        try sealChunk(chunk, index: index, final: final, with: fileKey, appendingTo: &output)
        return output
    }

    /// ``sealChunk(_:index:final:with:)`` appending the sealed chunk to `output` (no copy of
    /// its own: a streaming writer seals a file's chunks into one buffer).
    public static func sealChunk(
        _ chunk: some DataProtocol, index: Int, final: Bool, with fileKey: AssetFileKey, appendingTo output: inout [UInt8]
    ) throws {
        let box = try AES.GCM.seal(
            chunk, using: fileKey.key, nonce: try nonce(fileKey.noncePrefix, index), authenticating: aad(index, final: final))
        output += box.ciphertext
        output += box.tag
    }

    /// How many chunks a file of `plaintextSize` bytes is sealed in (an empty file: one).
    public static func chunkCount(plaintextSize: Int64, chunkSize: Int) -> Int {
        max(1, Int((plaintextSize + Int64(chunkSize) - 1) / Int64(chunkSize)))
    }

    /// The length of the ciphertext of a file of `plaintextSize` bytes.
    public static func sealedSize(plaintextSize: Int64, chunkSize: Int = defaultChunkSize) -> Int64 {
        Int64(headerByteCount) + plaintextSize + Int64(chunkCount(plaintextSize: plaintextSize, chunkSize: chunkSize) * tagByteCount)
    }

    /// The length of the plaintext of a ciphertext of `sealedSize` bytes, or `nil` when no
    /// plaintext seals to that length.
    public static func plaintextSize(sealedSize: Int64, chunkSize: Int) -> Int64? {
        let body = sealedSize - Int64(headerByteCount)
        guard body >= Int64(tagByteCount) else { return nil }
        let sealedChunk = Int64(chunkSize + tagByteCount)
        let count = (body + sealedChunk - 1) / sealedChunk
        let plain = body - count * Int64(tagByteCount)
        return Self.sealedSize(plaintextSize: plain, chunkSize: chunkSize) == sealedSize ? plain : nil
    }

    /// Bytes `9 + i × (chunk size + 16)` onward: where chunk `index` starts in a ciphertext.
    public static func chunkOffset(_ index: Int, chunkSize: Int) -> Int64 {
        Int64(headerByteCount) + Int64(index) * Int64(chunkSize + tagByteCount)
    }

    /// The plaintext of a whole ciphertext.
    /// - Throws: ``EncryptionError``: `.authenticationFailed` for an altered, re-ordered or
    ///   truncated file, or another key.
    public static func open(_ ciphertext: [UInt8], with fileKey: SymmetricKey) throws(EncryptionError) -> [UInt8] {
        let (chunkSize, prefix) = try header(ciphertext)
        let sealedChunk = chunkSize + tagByteCount
        let body = ciphertext.count - headerByteCount
        guard body >= tagByteCount else { throw .tampered("the encrypted file") }
        let count = (body + sealedChunk - 1) / sealedChunk
        var output: [UInt8] = []
        output.reserveCapacity(body - count * tagByteCount)
        for index in 0..<count {
            let start = headerByteCount + index * sealedChunk
            output += try openChunk(
                Array(ciphertext[start..<min(start + sealedChunk, ciphertext.count)]), index: index, final: index == count - 1,
                prefix: prefix, key: fileKey)
        }
        return output
    }

    /// One chunk of a ciphertext (as a ranged download reads it): `sealed` is the chunk's
    /// bytes with its tag; `final` says whether it is the file's last chunk.
    public static func openChunk(_ sealed: [UInt8], index: Int, final: Bool, prefix: [UInt8], key: SymmetricKey)
        throws(EncryptionError) -> [UInt8]
    {
        var output: [UInt8] = []
        try openChunk(sealed, index: index, final: final, prefix: prefix, key: key, appendingTo: &output)
        return output
    }

    /// ``openChunk(_:index:final:prefix:key:)`` appending the opened chunk to `output`
    /// (nothing is appended unless the chunk authenticates).
    public static func openChunk(
        _ sealed: some DataProtocol, index: Int, final: Bool, prefix: [UInt8], key: SymmetricKey,
        appendingTo output: inout [UInt8]
    ) throws(EncryptionError) {
        guard sealed.count >= tagByteCount else { throw .tampered("chunk \(index) of the encrypted file") }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: try nonce(prefix, index), ciphertext: sealed.prefix(sealed.count - tagByteCount),
                tag: sealed.suffix(tagByteCount))
            output += try AES.GCM.open(box, using: key, authenticating: aad(index, final: final))
        } catch {
            throw .tampered("chunk \(index) of the encrypted file")
        }
    }

    /// The chunk size and nonce prefix of a ciphertext's header.
    public static func header(_ ciphertext: [UInt8]) throws(EncryptionError) -> (chunkSize: Int, prefix: [UInt8]) {
        guard ciphertext.count >= headerByteCount else {
            throw EncryptionError(.malformed, "an encrypted file starts with a \(headerByteCount)-byte header")
        }
        guard ciphertext[0] == version else {
            throw EncryptionError(.unsupportedVersion, "encrypted file version \(ciphertext[0]); this build reads \(version)")
        }
        let size = ciphertext[1...4].reduce(0) { $0 << 8 | Int($1) }
        guard size > 0, size <= 1 << 24 else { throw EncryptionError(.malformed, "chunk size \(size) out of range") }
        return (size, Array(ciphertext[5...8]))
    }

    private static func nonce(_ prefix: [UInt8], _ index: Int) throws -> AES.GCM.Nonce {
        try AES.GCM.Nonce(data: prefix + bigEndian(UInt64(index)))
    }

    private static func aad(_ index: Int, final: Bool) -> [UInt8] {
        Array("nimbus.asset.v1".utf8) + bigEndian(UInt64(index)) + [final ? 1 : 0]
    }

    static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }
}
