import Crypto
import Foundation

/// The key of one encrypted file (docs/ENCRYPTION.md, "Encrypted assets"): AES-256 with the
/// nonce prefix and chunk size its ``AssetSealing`` ciphertext uses.
///
/// The key is *convergent*: derived from the zone key and the SHA-256 of the file's bytes, so
/// the same file saved twice in one zone is the same ciphertext, which the server stores once
/// (deduplication on ciphertext), and an upload interrupted before a relaunch resumes on the
/// same bytes. The price: whoever holds the zone's key (its owner's devices and participants)
/// and the server learn that two files of the zone are equal; across zones, users and key
/// rotations the same file is different ciphertext.
///
/// ```swift
/// let fileKey = AssetFileKey.convergent(zoneKey: zoneKey, plaintextDigest: Array(SHA256.hash(data: photo)))
/// let ciphertext = try AssetSealing.seal(Array(photo), with: fileKey)
/// ```
public struct AssetFileKey: Sendable {
    public let key: SymmetricKey
    /// The 4 bytes every chunk's nonce starts with.
    public let noncePrefix: [UInt8]
    public let chunkSize: Int

    public init(key: SymmetricKey, noncePrefix: [UInt8], chunkSize: Int = AssetSealing.defaultChunkSize) {
        precondition(noncePrefix.count == 4 && chunkSize > 0 && chunkSize <= 1 << 24, "nonce prefix or chunk size out of range")
        self.key = key
        self.noncePrefix = noncePrefix
        self.chunkSize = chunkSize
    }

    /// The key of a file whose bytes hash to `plaintextDigest` (SHA-256), in the zone of
    /// `zoneKey`: `HKDF-SHA256(zone key, salt "nimbus.asset.key.v1",
    /// info Binding("nimbus.asset.key.v1", []) ‖ digest ‖ chunk size)`, 36 bytes: the key, then
    /// the nonce prefix. The chunk size is part of the derivation, so one key never seals two
    /// different chunkings of a file under the same nonces.
    public static func convergent(
        zoneKey: ZoneKey, plaintextDigest: [UInt8], chunkSize: Int = AssetSealing.defaultChunkSize
    ) -> AssetFileKey {
        let info = Binding("nimbus.asset.key.v1", []).appending(plaintextDigest)
            .appending(AssetSealing.bigEndian(UInt32(chunkSize))).bytes
        let derived = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: zoneKey.key, salt: Array("nimbus.asset.key.v1".utf8), info: info, outputByteCount: 36)
        let bytes = derived.withUnsafeBytes { Array($0) }
        return AssetFileKey(
            key: SymmetricKey(data: bytes[0..<32]), noncePrefix: Array(bytes[32..<36]), chunkSize: chunkSize)
    }
}

extension FieldPlace {
    /// 16 bytes naming the record and field of an encrypted file: the first half of
    /// `SHA-256(Binding("nimbus.asset.place.v1", [recordName, fieldName]))`. A file key is
    /// wrapped for one place, so a server that moves an asset dictionary to another record or
    /// field is caught.
    public var recordTag: [UInt8] {
        Array(SHA256.hash(data: Binding("nimbus.asset.place.v1", [recordName, fieldName]).bytes).prefix(16))
    }
}

/// A file key wrapped with the zone key: the asset dictionary's `wrappingKey` (Apple: "the
/// secret key used to encrypt the asset"), base64. It names its zone and owner in clear and
/// its record and field by a tag, so a device opens a downloaded asset with nothing but the
/// asset dictionary, and a device that fetched the record checks that the asset is the
/// record's own (``recordTag``).
///
/// Bytes: `0x01 ‖ zone name ‖ owner` (each length-prefixed, 32-bit) `‖ record tag (16) ‖
/// zone key ID (16) ‖ nonce (12) ‖ AES-GCM(file key (32)) ‖ tag (16)`. The associated data is
/// `Binding("nimbus.asset.wrap.v1", [container, zone name, owner]) ‖ record tag ‖ key ID`
/// (each length-prefixed).
public struct WrappedAssetKey: Sendable, Equatable {
    static let version: UInt8 = 1
    static let tagByteCount = 16

    public let zoneName: String
    public let ownerRecordName: String
    /// ``FieldPlace/recordTag`` of the place the key was wrapped for.
    public let recordTag: [UInt8]
    /// The ID of the zone key that wraps it.
    public let keyID: [UInt8]
    /// The whole wrapped form (what `wrappingKey` carries, base64).
    public let bytes: [UInt8]

    /// Wraps `fileKey` with `zoneKey` for `place`.
    public static func wrap(_ fileKey: AssetFileKey, with zoneKey: ZoneKey, for place: FieldPlace) throws -> WrappedAssetKey {
        try wrap(key: fileKey.key, with: zoneKey, for: place)
    }

    /// Wraps a file's 32-byte key (a version 2 or 3 file's table key, ``AssetChunks``) with
    /// `zoneKey` for `place`.
    public static func wrap(key: SymmetricKey, with zoneKey: ZoneKey, for place: FieldPlace) throws -> WrappedAssetKey {
        let tag = place.recordTag
        let aad = binding(place.container, place.zoneName, place.ownerRecordName, tag, zoneKey.id)
        let box = try AES.GCM.seal(key.withUnsafeBytes { Array($0) }, using: zoneKey.key, authenticating: aad)
        guard let combined = box.combined else { throw EncryptionError(.malformed, "AES-GCM gave no combined form") }
        var header: [UInt8] = []
        for part in [place.zoneName, place.ownerRecordName] {
            header += AssetSealing.bigEndian(UInt32(part.utf8.count)) + Array(part.utf8)
        }
        let bytes = [version] + header + tag + zoneKey.id + Array(combined)
        return WrappedAssetKey(
            zoneName: place.zoneName, ownerRecordName: place.ownerRecordName, recordTag: tag, keyID: zoneKey.id, bytes: bytes)
    }

    /// Reads a wrapped key's clear part (not yet authenticated: ``unwrap(keys:container:)`` does).
    public init(_ bytes: [UInt8]) throws(EncryptionError) {
        guard let version = bytes.first else { throw EncryptionError(.malformed, "an empty wrapped file key") }
        guard version == Self.version else {
            throw EncryptionError(.unsupportedVersion, "wrapped file key version \(version); this build reads \(Self.version)")
        }
        var offset = 1
        func part() throws(EncryptionError) -> String {
            guard bytes.count >= offset + 4 else { throw EncryptionError(.malformed, "a wrapped file key is cut short") }
            let count = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard count <= 1024, bytes.count >= offset + count, let text = String(bytes: bytes[offset..<offset + count], encoding: .utf8)
            else { throw EncryptionError(.malformed, "a wrapped file key names no valid zone or owner") }
            offset += count
            return text
        }
        let zone = try part()
        let owner = try part()
        let sealedCount = 12 + 32 + 16
        guard bytes.count == offset + Self.tagByteCount + ZoneKey.idByteCount + sealedCount else {
            throw EncryptionError(.malformed, "a wrapped file key has \(bytes.count) bytes; its parts need more or fewer")
        }
        self.zoneName = zone
        self.ownerRecordName = owner
        self.recordTag = Array(bytes[offset..<offset + Self.tagByteCount])
        self.keyID = Array(bytes[(offset + Self.tagByteCount)..<(offset + Self.tagByteCount + ZoneKey.idByteCount)])
        self.bytes = bytes
    }

    private init(zoneName: String, ownerRecordName: String, recordTag: [UInt8], keyID: [UInt8], bytes: [UInt8]) {
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
        self.recordTag = recordTag
        self.keyID = keyID
        self.bytes = bytes
    }

    /// Whether the key was wrapped for `place` (its zone, owner, record and field).
    public func belongs(to place: FieldPlace) -> Bool {
        zoneName == place.zoneName && ownerRecordName == place.ownerRecordName && ConstantTime.equal(recordTag, place.recordTag)
    }

    /// The file key, opened with whichever of `keys` wrapped it (the zone's keys).
    /// - Throws: ``EncryptionError``: `.unknownKey` (no key of that ID), `.authenticationFailed`
    ///   (altered, or wrapped for another container, zone, owner or place).
    public func unwrap(keys: [ZoneKey], container: String) throws(EncryptionError) -> SymmetricKey {
        guard let zoneKey = keys.first(where: { $0.id == keyID }) else {
            throw EncryptionError(.unknownKey, "the file key was wrapped with zone key \(hex(keyID)), which this device does not hold")
        }
        let sealed = bytes.suffix(12 + 32 + 16)
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            let aad = Self.binding(container, zoneName, ownerRecordName, recordTag, keyID)
            return SymmetricKey(data: try AES.GCM.open(box, using: zoneKey.key, authenticating: aad))
        } catch {
            throw .tampered("the wrapped key of an encrypted file")
        }
    }

    /// Apple's `referenceChecksum` ("the checksum of the wrapping key"): the base64 SHA-256
    /// of the wrapped key's bytes.
    public var referenceChecksum: String { Data(SHA256.hash(data: bytes)).base64EncodedString() }

    private static func binding(_ container: String, _ zone: String, _ owner: String, _ tag: [UInt8], _ keyID: [UInt8])
        -> [UInt8]
    {
        Binding("nimbus.asset.wrap.v1", [container, zone, owner]).appending(tag).appending(keyID).bytes
    }
}
