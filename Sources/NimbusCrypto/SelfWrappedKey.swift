import Crypto
import Foundation

/// A zone key sealed by its owner's account key for the owner's own key directory: AES-256-GCM
/// under a key HKDF derives from the account's private key, bound to a context (the zone and
/// owner). Unlike a ``WrappedKey`` (which anyone holding the public key can make), only a
/// holder of the account key can make one: a server cannot slip a device a zone key of its own
/// choosing for new writes.
///
/// Bytes: `version (2) ‖ nonce (12) ‖ sealed ID and key (48) ‖ tag (16)`.
///
/// ```swift
/// let context = ["zone", container, "Album", me]
/// let sealed = try SelfWrappedKey.wrap(zoneKey, account: account, context: context)
/// let key = try SelfWrappedKey.unwrap(sealed, account: account, context: context)
/// ```
public enum SelfWrappedKey {
    static let version: UInt8 = 2
    static let byteCount = 1 + 12 + ZoneKey.idByteCount + ZoneKey.keyByteCount + 16

    /// `key` sealed for the holders of `account`, for `context`.
    public static func wrap(_ key: ZoneKey, account: KeyAgreementIdentity, context: [String]) throws -> [UInt8] {
        let box = try AES.GCM.seal(
            key.id + key.bytes, using: sealingKey(account, context), authenticating: Binding("nimbus.self.v1", context).bytes)
        guard let combined = box.combined else { throw EncryptionError(.malformed, "AES-GCM gave no combined form") }
        return [version] + Array(combined)
    }

    /// The zone key sealed by ``wrap(_:account:context:)``.
    /// - Throws: `.malformed`, `.unsupportedVersion`, `.authenticationFailed` (altered, made
    ///   without this account key, or for another context).
    public static func unwrap(_ sealed: [UInt8], account: KeyAgreementIdentity, context: [String]) throws(EncryptionError)
        -> ZoneKey
    {
        guard sealed.count == byteCount else {
            throw EncryptionError(.malformed, "a self-wrapped zone key has \(byteCount) bytes; got \(sealed.count)")
        }
        guard sealed[0] == version else {
            throw EncryptionError(.unsupportedVersion, "self-wrapped key version \(sealed[0]); this build reads \(version)")
        }
        let plain: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(combined: sealed[1...])
            plain = Array(
                try AES.GCM.open(box, using: sealingKey(account, context), authenticating: Binding("nimbus.self.v1", context).bytes))
        } catch {
            throw .tampered("the zone key in the key directory")
        }
        return try ZoneKey(id: Array(plain[..<ZoneKey.idByteCount]), bytes: Array(plain[ZoneKey.idByteCount...]))
    }

    private static func sealingKey(_ account: KeyAgreementIdentity, _ context: [String]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: account.privateBytes), salt: Array("nimbus.self.v1".utf8),
            info: Binding("nimbus.self.v1", context).bytes, outputByteCount: 32)
    }
}
