import Crypto
import Foundation

/// Where an encrypted field lives: what its ciphertext is bound to. A value sealed for one
/// field of one record does not open as another field, record, zone or container's (a
/// server swapping ciphertexts is caught).
public struct FieldPlace: Sendable, Hashable {
    public var container: String
    public var zoneName: String
    /// The zone owner's user record name.
    public var ownerRecordName: String
    public var recordName: String
    public var fieldName: String

    public init(container: String, zoneName: String, ownerRecordName: String, recordName: String, fieldName: String) {
        self.container = container
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
        self.recordName = recordName
        self.fieldName = fieldName
    }

    var binding: Binding { RecordFieldPlaces(self).prefix.appending(Array(fieldName.utf8)) }
}

/// The places of one record's fields, for sealing many of them: the record's part of their
/// binding is built once (a field's binding is that part and its name, as ``FieldPlace``'s).
package struct RecordFieldPlaces: Sendable {
    let prefix: Binding

    package init(container: String, zoneName: String, ownerRecordName: String, recordName: String) {
        prefix = Binding("nimbus.field.v1", [container, zoneName, ownerRecordName, recordName], room: 64)
    }

    init(_ place: FieldPlace) {
        self.init(
            container: place.container, zoneName: place.zoneName, ownerRecordName: place.ownerRecordName,
            recordName: place.recordName)
    }

    /// The additional authenticated data of `field`'s values sealed with the key `keyID`.
    func authenticatedData(of field: String, keyID: [UInt8]) -> [UInt8] {
        var binding = prefix
        binding.append(field.utf8)
        binding.append(keyID)
        return binding.bytes
    }
}

/// Seals and opens the values of encrypted fields (`encryptedValues`): AES-256-GCM with the
/// zone's key, bound to the field's place (docs/ENCRYPTION.md, "Field envelope").
///
/// The envelope is `version (1) ‖ key ID (16) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`; on the
/// wire it travels base64url-encoded as the value of an `ENCRYPTED_BYTES` field.
///
/// ```swift
/// let place = FieldPlace(container: "iCloud.com.example", zoneName: "Album", ownerRecordName: me,
///                        recordName: "photo-1", fieldName: "caption")
/// let envelope = try FieldSealing.seal(Array("Beach".utf8), with: zoneKey, for: place)
/// let caption = try FieldSealing.open(envelope, keys: [zoneKey], for: place)
/// ```
public enum FieldSealing {
    static let version: UInt8 = 1
    static let overhead = 1 + ZoneKey.idByteCount + 12 + 16

    /// The envelope of `plaintext` for `place`, sealed with `key` under a fresh random nonce.
    public static func seal(_ plaintext: [UInt8], with key: ZoneKey, for place: FieldPlace) throws -> [UInt8] {
        Array(try sealedData(plaintext, with: key, for: place))
    }

    /// ``seal(_:with:for:)`` as `Data`, the form an `ENCRYPTED_BYTES` value holds: built in
    /// one buffer of its final size from the sealed box's own bytes.
    public static func sealedData(_ plaintext: [UInt8], with key: ZoneKey, for place: FieldPlace) throws -> Data {
        var nonces = RandomNonces()
        return try sealedData(plaintext, with: key, for: place, nonces: &nonces)
    }

    /// ``sealedData(_:with:for:)`` with the next of a batch's `nonces`.
    public static func sealedData(
        _ plaintext: [UInt8], with key: ZoneKey, for place: FieldPlace, nonces: inout RandomNonces
    ) throws -> Data {
        try sealedData(plaintext, with: key, field: place.fieldName, of: RecordFieldPlaces(place), nonces: &nonces)
    }

    /// ``sealedData(_:with:for:nonces:)`` for `field` of the record whose places are `places`.
    package static func sealedData(
        _ plaintext: [UInt8], with key: ZoneKey, field: String, of places: RecordFieldPlaces, nonces: inout RandomNonces
    ) throws -> Data {
        let aad = places.authenticatedData(of: field, keyID: key.id)
        let box = try AES.GCM.seal(plaintext, using: key.key, nonce: nonces.next(), authenticating: aad)
        // `combined` is nonce ‖ ciphertext ‖ tag (a 12-byte nonce, as here, always has it).
        let combined = box.combined ?? Data(box.nonce) + box.ciphertext + box.tag
        // One buffer of the final size, filled by two copies (appends to `Data` cost more
        // than the encryption of a small value).
        var envelope = Data(count: 1 + ZoneKey.idByteCount + combined.count)
        envelope.withUnsafeMutableBytes { out in
            out[0] = version
            UnsafeMutableRawBufferPointer(rebasing: out[1..<(1 + ZoneKey.idByteCount)]).copyBytes(from: key.id)
            combined.withUnsafeBytes { sealed in
                UnsafeMutableRawBufferPointer(rebasing: out[(1 + ZoneKey.idByteCount)...]).copyMemory(from: sealed)
            }
        }
        return envelope
    }

    /// The plaintext of an envelope, opened with whichever of `keys` sealed it.
    /// - Throws: ``EncryptionError``: `.malformed`, `.unsupportedVersion`, `.unknownKey` (no
    ///   key of that ID), `.authenticationFailed` (altered, or sealed for another place).
    public static func open(_ envelope: [UInt8], keys: [ZoneKey], for place: FieldPlace) throws(EncryptionError) -> [UInt8] {
        guard envelope.count >= overhead else {
            throw EncryptionError(.malformed, "an encrypted value has at least \(overhead) bytes; got \(envelope.count)")
        }
        guard envelope[0] == version else {
            throw EncryptionError(.unsupportedVersion, "encrypted value version \(envelope[0]); this build reads version \(version)")
        }
        let id = Array(envelope[1...ZoneKey.idByteCount])
        guard let key = keys.first(where: { $0.id == id }) else {
            throw EncryptionError(.unknownKey, "the value was sealed with zone key \(hex(id)), which this device does not hold")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: envelope[(1 + ZoneKey.idByteCount)...])
            return Array(try AES.GCM.open(box, using: key.key, authenticating: place.binding.appending(id).bytes))
        } catch {
            throw .tampered("the encrypted value of '\(place.fieldName)' in '\(place.recordName)'")
        }
    }

    /// The ID of the key an envelope was sealed with (`nil` when it is not an envelope).
    public static func keyID(of envelope: [UInt8]) -> [UInt8]? {
        guard envelope.count >= overhead, envelope[0] == version else { return nil }
        return Array(envelope[1...ZoneKey.idByteCount])
    }
}
