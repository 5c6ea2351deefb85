import Crypto
import Foundation
import _CryptoExtras

/// Encrypted files, versions 2 and 3 (docs/ENCRYPTION.md, "Asset format"): each chunk sealed
/// with a key derived from that chunk's own bytes, so that a file is hashed and sealed in one
/// streamed pass (no hash of the whole file first), chunks seal in parallel, and the same
/// file in the same zone is still the same ciphertext (deduplication, resumed uploads).
/// This build writes version 3 and reads both.
///
/// Layout: `version ‖ chunk size (4, big-endian)`, then each chunk's ciphertext and 16-byte
/// tag, then the *key table*: every chunk's key, in order, sealed with the *table key*. The
/// table key is what the asset dictionary's `wrappingKey` wraps (``WrappedAssetKey``).
///
/// With `S` the zone's secrets (``Secrets``), `c` the chunk size, `n` the chunk count, `P`
/// the plaintext size and `v` the version's label (`"nimbus.asset.v2"` or `"…v3"`):
/// - chunk `i`'s key `kᵢ`:
///   - version 3: `kᵢ = HMAC-SHA256(S.chunk, c ‖ i ‖ final ‖ Tᵢ)`, where `Tᵢ` is the 16-byte
///     tag of AES-256-GCM-SIV (RFC 8452) under `S.mac` with nonce `0⁴ ‖ i`, an empty
///     plaintext and the chunk's bytes as associated data: a pseudorandom function of the
///     chunk, one POLYVAL pass (a third of a SHA-256 pass on this hardware);
///   - version 2: `kᵢ = HMAC-SHA256(S.chunk, c ‖ i ‖ final ‖ chunk bytes)`;
/// - the chunk sealed with AES-256-GCM under `kᵢ`, nonce `0⁴ ‖ i`, associated data
///   `v ‖ c ‖ i ‖ final`;
/// - the table key `t = HMAC-SHA256(S.table, c ‖ P ‖ k₀ ‖ … ‖ kₙ₋₁)`, the table
///   AES-256-GCM of `k₀ ‖ … ‖ kₙ₋₁` under `t`, nonce `0¹²`, associated data
///   `v.table ‖ c ‖ P` (integers big-endian: `c` 4 bytes, `i` and `P` 8, `final` 1).
///
/// ```swift
/// let secrets = AssetChunks.Secrets(zoneKey: zoneKey)
/// let (ciphertext, tableKey) = try AssetChunks.seal(photoBytes, secrets: secrets)
/// let photo = try AssetChunks.open(ciphertext, tableKey: tableKey)
/// ```
public enum AssetChunks {
    /// The version this build writes.
    public static let version: UInt8 = 3
    /// The versions of this layout this build reads.
    public static let versions: ClosedRange<UInt8> = 2...3
    public static let defaultChunkSize = 256 << 10
    public static let headerByteCount = 5
    public static let tagByteCount = 16
    public static let keyByteCount = 32

    /// The secrets a zone key gives its files' keys, for one version: `HKDF-SHA256(zone key,
    /// salt "nimbus.asset.v2" or "…v3", info "chunk", "table" and, in version 3, "mac")`, 32
    /// bytes each.
    public struct Secrets: Sendable {
        public let version: UInt8
        public let chunk: SymmetricKey
        public let table: SymmetricKey
        /// The GCM-SIV key of version 3's chunk tags (`nil` in version 2).
        public let mac: SymmetricKey?

        public init(zoneKey: ZoneKey, version: UInt8 = AssetChunks.version) {
            precondition(AssetChunks.versions.contains(version), "asset format version \(version) has no chunk secrets")
            func derive(_ info: String) -> SymmetricKey {
                HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: zoneKey.key, salt: AssetChunks.label(version), info: Array(info.utf8), outputByteCount: 32)
            }
            self.version = version
            chunk = derive("chunk")
            table = derive("table")
            mac = version >= 3 ? derive("mac") : nil
        }
    }

    /// Where everything is in the ciphertext of a file of `plaintextSize` bytes.
    public struct Layout: Sendable, Equatable {
        /// The format version (2 or 3: the same layout, other keys).
        public let version: UInt8
        public let chunkSize: Int
        public let plaintextSize: Int64
        /// How many chunks (an empty file: one, empty).
        public var chunkCount: Int { max(1, Int((plaintextSize + Int64(chunkSize) - 1) / Int64(chunkSize))) }
        public var sealedChunkSize: Int { chunkSize + tagByteCount }
        /// Where the key table starts: after the header and every sealed chunk (`5 + P + 16·n`).
        public var tableOffset: Int64 { Int64(headerByteCount) + plaintextSize + Int64(chunkCount * tagByteCount) }
        public var tableByteCount: Int { chunkCount * keyByteCount + tagByteCount }
        /// The length of the whole ciphertext.
        public var sealedSize: Int64 { tableOffset + Int64(tableByteCount) }

        public init(plaintextSize: Int64, chunkSize: Int = defaultChunkSize, version: UInt8 = AssetChunks.version) {
            precondition(chunkSize > 0 && chunkSize <= 1 << 24 && plaintextSize >= 0, "chunk size or file size out of range")
            precondition(AssetChunks.versions.contains(version), "asset format version \(version) is not this layout's")
            self.version = version
            self.chunkSize = chunkSize
            self.plaintextSize = plaintextSize
        }

        /// The layout of a ciphertext of `sealedSize` bytes and this chunk size, or `nil` when
        /// no file seals to that length (it was cut or padded).
        public init?(sealedSize: Int64, chunkSize: Int, version: UInt8 = AssetChunks.version) {
            // The size comes from the network: no arithmetic below may overflow.
            guard AssetChunks.versions.contains(version), chunkSize > 0, chunkSize <= 1 << 24, sealedSize >= 0, sealedSize <= 1 << 60 else { return nil }
            let perChunk = Int64(chunkSize + tagByteCount + keyByteCount)
            let body = sealedSize - Int64(headerByteCount + tagByteCount)
            guard body >= Int64(tagByteCount + keyByteCount) else { return nil }
            let count = (body + perChunk - 1) / perChunk
            let plain = body - count * Int64(tagByteCount + keyByteCount)
            guard plain >= 0 else { return nil }
            self.init(plaintextSize: plain, chunkSize: chunkSize, version: version)
            guard self.sealedSize == sealedSize else { return nil }
        }

        /// Where chunk `index` starts (`5 + index × (c + 16)`); past the last chunk, the table.
        public func chunkOffset(_ index: Int) -> Int64 {
            index >= chunkCount ? tableOffset : Int64(headerByteCount) + Int64(index) * Int64(sealedChunkSize)
        }

        /// The plaintext length of chunk `index`.
        public func plainCount(of index: Int) -> Int {
            Int(min(Int64(chunkSize), plaintextSize - Int64(index) * Int64(chunkSize)))
        }

        public func isFinal(_ index: Int) -> Bool { index == chunkCount - 1 }

        /// The header the ciphertext starts with.
        public var header: [UInt8] { [version] + bigEndian(UInt32(chunkSize)) }
    }

    /// The version and chunk size a ciphertext's first bytes declare (version 1:
    /// ``AssetSealing``; versions 2 and 3: this format).
    public static func header(_ bytes: some Collection<UInt8>) throws(EncryptionError) -> (version: UInt8, chunkSize: Int) {
        let bytes = Array(bytes.prefix(AssetSealing.headerByteCount))
        guard let version = bytes.first else { throw EncryptionError(.malformed, "an encrypted file starts with a header") }
        switch version {
        case AssetSealing.version:
            return (version, try AssetSealing.header(bytes).chunkSize)
        case versions:
            guard bytes.count >= headerByteCount else { throw EncryptionError(.malformed, "an encrypted file's header is cut short") }
            let size = bytes[1...4].reduce(0) { $0 << 8 | Int($1) }
            guard size > 0, size <= 1 << 24 else { throw EncryptionError(.malformed, "chunk size \(size) out of range") }
            return (version, size)
        default:
            throw EncryptionError(.unsupportedVersion, "encrypted file version \(version); this build reads 1, 2 and 3")
        }
    }

    /// Chunk `index`'s key (what a resumed upload recomputes for the chunks the server already
    /// holds): in version 3 the HMAC of the chunk's GCM-SIV tag, in version 2 of its bytes.
    public static func chunkKey(_ chunk: some DataProtocol, index: Int, final: Bool, chunkSize: Int, secrets: Secrets) -> [UInt8] {
        var mac = HMAC<SHA256>(key: secrets.chunk)
        mac.update(data: bigEndian(UInt32(chunkSize)) + bigEndian(UInt64(index)) + [final ? 1 : 0])
        if let tagKey = secrets.mac {
            mac.update(data: chunkTag(chunk, index: index, key: tagKey))
        } else {
            for region in chunk.regions { mac.update(data: region) }
        }
        return Array(mac.finalize())
    }

    /// Version 3's `Tᵢ`: the tag AES-256-GCM-SIV gives an empty plaintext with the chunk as
    /// associated data.
    static func chunkTag(_ chunk: some DataProtocol, index: Int, key: SymmetricKey) -> Data {
        do {
            let nonce = try AES.GCM._SIV.Nonce(data: nonceBytes(index))
            return try AES.GCM._SIV.seal([UInt8](), using: key, nonce: nonce, authenticating: chunk).tag
        } catch {
            // Only a key of another size or a nonce of another length fail, and neither can.
            preconditionFailure("AES-GCM-SIV refused a 32-byte key and a 12-byte nonce: \(error)")
        }
    }

    /// Seals chunk `index` (at most `chunkSize` bytes) onto `output` (its ciphertext, then its
    /// tag) and returns its key, for the table.
    @discardableResult
    public static func sealChunk(
        _ chunk: some DataProtocol, index: Int, final: Bool, chunkSize: Int, secrets: Secrets, appendingTo output: inout [UInt8]
    ) throws -> [UInt8] {
        let (sealed, key) = try sealChunk(chunk, index: index, final: final, chunkSize: chunkSize, secrets: secrets)
        output += sealed
        return key
    }

    /// Seals chunk `index` (at most `chunkSize` bytes): its ciphertext and tag, as the file
    /// holds them (the sealed box's own bytes, not copied again), and its key, for the table.
    public static func sealChunk(
        _ chunk: some DataProtocol, index: Int, final: Bool, chunkSize: Int, secrets: Secrets
    ) throws -> (sealed: Data, key: [UInt8]) {
        let key = chunkKey(chunk, index: index, final: final, chunkSize: chunkSize, secrets: secrets)
        let box = try AES.GCM.seal(
            chunk, using: SymmetricKey(data: key), nonce: try nonce(index),
            authenticating: aad(secrets.version, chunkSize, index, final))
        // `combined` is nonce ‖ ciphertext ‖ tag (a 12-byte nonce always has it).
        guard let combined = box.combined else { return (box.ciphertext + box.tag, key) }
        return (combined.dropFirst(12), key)
    }

    /// Opens chunk `index` (its ciphertext and tag) with its key from the table, onto `output`
    /// (nothing is appended unless it authenticates).
    public static func openChunk(
        _ sealed: some DataProtocol, index: Int, layout: Layout, key: some ContiguousBytes, appendingTo output: inout [UInt8]
    ) throws(EncryptionError) {
        guard sealed.count == layout.plainCount(of: index) + tagByteCount else { throw .tampered("chunk \(index) of the encrypted file") }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: try nonce(index), ciphertext: sealed.prefix(sealed.count - tagByteCount), tag: sealed.suffix(tagByteCount))
            output += try AES.GCM.open(
                box, using: SymmetricKey(data: key), authenticating: aad(layout.version, layout.chunkSize, index, layout.isFinal(index)))
        } catch {
            throw .tampered("chunk \(index) of the encrypted file")
        }
    }

    /// The table key and the sealed table of a file's chunk keys (`keys`: 32 bytes each, in order).
    public static func sealTable(_ keys: [UInt8], layout: Layout, secrets: Secrets) throws -> (tableKey: SymmetricKey, sealed: [UInt8]) {
        precondition(keys.count == layout.chunkCount * keyByteCount, "one key per chunk")
        precondition(layout.version == secrets.version, "the layout and the secrets are of one version")
        var mac = HMAC<SHA256>(key: secrets.table)
        mac.update(data: bigEndian(UInt32(layout.chunkSize)) + bigEndian(UInt64(layout.plaintextSize)))
        mac.update(data: keys)
        let tableKey = SymmetricKey(data: Array(mac.finalize()))
        let box = try AES.GCM.seal(keys, using: tableKey, nonce: try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 12)), authenticating: tableAAD(layout))
        return (tableKey, Array(box.ciphertext) + Array(box.tag))
    }

    /// The chunk keys of a sealed table (32 bytes each, in order).
    /// - Throws: `.authenticationFailed` for an altered table, another file's, another key.
    public static func openTable(_ sealed: some DataProtocol, layout: Layout, tableKey: SymmetricKey) throws(EncryptionError) -> [UInt8] {
        guard sealed.count == layout.tableByteCount else { throw .tampered("the key table of the encrypted file") }
        do {
            let box = try AES.GCM.SealedBox(
                nonce: try AES.GCM.Nonce(data: [UInt8](repeating: 0, count: 12)), ciphertext: sealed.prefix(sealed.count - tagByteCount),
                tag: sealed.suffix(tagByteCount))
            return Array(try AES.GCM.open(box, using: tableKey, authenticating: tableAAD(layout)))
        } catch {
            throw .tampered("the key table of the encrypted file")
        }
    }

    /// The ciphertext of a whole file in memory and its table key.
    public static func seal(_ plaintext: [UInt8], secrets: Secrets, chunkSize: Int = defaultChunkSize) throws
        -> (ciphertext: [UInt8], tableKey: SymmetricKey)
    {
        let layout = Layout(plaintextSize: Int64(plaintext.count), chunkSize: chunkSize, version: secrets.version)
        var output = layout.header
        output.reserveCapacity(Int(layout.sealedSize))
        var keys: [UInt8] = []
        for index in 0..<layout.chunkCount {
            let start = index * chunkSize
            keys += try sealChunk(
                plaintext[start..<start + layout.plainCount(of: index)], index: index, final: layout.isFinal(index), chunkSize: chunkSize,
                secrets: secrets, appendingTo: &output)
        }
        let (tableKey, table) = try sealTable(keys, layout: layout, secrets: secrets)
        return (output + table, tableKey)
    }

    /// The plaintext of a whole ciphertext of this format.
    /// - Throws: `.authenticationFailed` for an altered, re-ordered, cut or padded file, or another key.
    public static func open(_ ciphertext: [UInt8], tableKey: SymmetricKey) throws(EncryptionError) -> [UInt8] {
        let (version, chunkSize) = try header(ciphertext)
        guard versions.contains(version) else { throw EncryptionError(.unsupportedVersion, "not a version 2 or 3 encrypted file") }
        guard let layout = Layout(sealedSize: Int64(ciphertext.count), chunkSize: chunkSize, version: version) else {
            throw .tampered("the encrypted file (its length fits no file)")
        }
        let keys = try openTable(ciphertext[Int(layout.tableOffset)...], layout: layout, tableKey: tableKey)
        var output: [UInt8] = []
        output.reserveCapacity(Int(layout.plaintextSize))
        for index in 0..<layout.chunkCount {
            let start = Int(layout.chunkOffset(index))
            try openChunk(
                ciphertext[start..<start + layout.plainCount(of: index) + tagByteCount], index: index, layout: layout,
                key: keys[index * keyByteCount..<(index + 1) * keyByteCount], appendingTo: &output)
        }
        return output
    }

    private static func nonce(_ index: Int) throws -> AES.GCM.Nonce {
        try AES.GCM.Nonce(data: nonceBytes(index))
    }

    /// Chunk `index`'s nonce, `0⁴ ‖ i`: its AES-GCM seal's, and in version 3 its tag's.
    private static func nonceBytes(_ index: Int) -> [UInt8] {
        [0, 0, 0, 0] + bigEndian(UInt64(index))
    }

    private static func aad(_ version: UInt8, _ chunkSize: Int, _ index: Int, _ final: Bool) -> [UInt8] {
        label(version) + bigEndian(UInt32(chunkSize)) + bigEndian(UInt64(index)) + [final ? 1 : 0]
    }

    private static func tableAAD(_ layout: Layout) -> [UInt8] {
        label(layout.version, table: true) + bigEndian(UInt32(layout.chunkSize)) + bigEndian(UInt64(layout.plaintextSize))
    }

    /// `"nimbus.asset.v2"`, `"nimbus.asset.table.v3"` and so on.
    static func label(_ version: UInt8, table: Bool = false) -> [UInt8] {
        Array("nimbus.asset.\(table ? "table." : "")v\(version)".utf8)
    }

    static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }
}
