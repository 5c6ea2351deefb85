import Crypto
import Foundation

/// An identity that can receive keys: a Curve25519 key agreement pair. A user's account key
/// is one (its public half is published with the user's identity, so owners can share zone
/// keys with them); each enrolling device makes one for the hand-over.
///
/// The private half never leaves the device: on Apple platforms keep ``privateBytes`` in the
/// Keychain, elsewhere in a file only the app reads.
public struct KeyAgreementIdentity: Sendable {
    public let privateKey: Curve25519.KeyAgreement.PrivateKey

    /// A new random pair.
    public init() { privateKey = Curve25519.KeyAgreement.PrivateKey() }

    /// A pair from its stored private bytes (32).
    public init(privateBytes: [UInt8]) throws(EncryptionError) {
        do {
            privateKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateBytes)
        } catch {
            throw EncryptionError(.malformed, "a private key is 32 bytes; got \(privateBytes.count)")
        }
    }

    /// The private bytes, for the Keychain or a protected file.
    public var privateBytes: [UInt8] { Array(privateKey.rawRepresentation) }
    /// The public bytes, to publish.
    public var publicBytes: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }
}

/// A secret (a zone key, an account's private key) sealed to one recipient's public key
/// (ECIES on Curve25519: an ephemeral key agreement, HKDF-SHA256, AES-256-GCM), bound to a
/// context: a zone key wrapped for Bob for zone Z opens only as Bob's key for zone Z.
///
/// Bytes: `version (1) ‖ ephemeral public key (32) ‖ nonce (12) ‖ sealed secret ‖ tag (16)`.
///
/// ```swift
/// let context = ["zone", container, "Album", alice, bob]
/// let wrapped = try WrappedKey.wrap(zoneKey, to: bobsPublicKey, context: context)
/// let key = try wrapped.unwrapZoneKey(with: bob, context: context)
/// ```
public struct WrappedKey: Sendable, Equatable {
    public let bytes: [UInt8]
    static let version: UInt8 = 1
    static let overhead = 1 + 32 + 12 + 16

    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Wraps `secret` for the holder of `recipient` (32 public bytes).
    public static func wrap(secret: [UInt8], to recipient: [UInt8], context: [String]) throws -> WrappedKey {
        let recipientKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: recipient)
        let ephemeral = Curve25519.KeyAgreement.PrivateKey()
        let ephemeralPublic = Array(ephemeral.publicKey.rawRepresentation)
        let wrapping = try wrappingKey(
            ephemeral.sharedSecretFromKeyAgreement(with: recipientKey), ephemeralPublic, recipient, context)
        let box = try AES.GCM.seal(secret, using: wrapping, authenticating: Binding("nimbus.wrap.v1", context).bytes)
        guard let combined = box.combined else { throw EncryptionError(.malformed, "AES-GCM gave no combined form") }
        return WrappedKey(bytes: [version] + ephemeralPublic + Array(combined))
    }

    /// Wraps a zone key (its ID and bytes).
    public static func wrap(_ key: ZoneKey, to recipient: [UInt8], context: [String]) throws -> WrappedKey {
        try wrap(secret: key.id + key.bytes, to: recipient, context: context)
    }

    /// The secret, for the holder of `identity`.
    /// - Throws: ``EncryptionError``: `.authenticationFailed` for a secret wrapped for another
    ///   recipient or context, or altered.
    public func unwrap(with identity: KeyAgreementIdentity, context: [String]) throws(EncryptionError) -> [UInt8] {
        guard bytes.count > Self.overhead else {
            throw EncryptionError(.malformed, "a wrapped key has more than \(Self.overhead) bytes; got \(bytes.count)")
        }
        guard bytes[0] == Self.version else {
            throw EncryptionError(.unsupportedVersion, "wrapped key version \(bytes[0]); this build reads \(Self.version)")
        }
        let ephemeralPublic = Array(bytes[1...32])
        do {
            let ephemeral = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeralPublic)
            let wrapping = try Self.wrappingKey(
                identity.privateKey.sharedSecretFromKeyAgreement(with: ephemeral), ephemeralPublic, identity.publicBytes,
                context)
            let box = try AES.GCM.SealedBox(combined: bytes[33...])
            return Array(try AES.GCM.open(box, using: wrapping, authenticating: Binding("nimbus.wrap.v1", context).bytes))
        } catch {
            throw .tampered("the wrapped key")
        }
    }

    /// The zone key, for the holder of `identity`.
    public func unwrapZoneKey(with identity: KeyAgreementIdentity, context: [String]) throws(EncryptionError) -> ZoneKey {
        let plain = try unwrap(with: identity, context: context)
        guard plain.count == ZoneKey.idByteCount + ZoneKey.keyByteCount else {
            throw EncryptionError(.malformed, "a wrapped zone key holds 48 bytes; got \(plain.count)")
        }
        return try ZoneKey(id: Array(plain[..<ZoneKey.idByteCount]), bytes: Array(plain[ZoneKey.idByteCount...]))
    }

    private static func wrappingKey(_ secret: SharedSecret, _ ephemeral: [UInt8], _ recipient: [UInt8], _ context: [String])
        -> SymmetricKey
    {
        secret.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: ephemeral + recipient, sharedInfo: Binding("nimbus.wrap.v1", context).bytes,
            outputByteCount: 32)
    }
}
