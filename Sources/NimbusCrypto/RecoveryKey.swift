import Crypto
import Foundation

/// The key a user writes down to restore their account key on a device when no other device
/// is at hand: 256 random bits shown as 52 characters of Crockford base32 in groups of four.
/// The server keeps the account key sealed with it and can open nothing.
///
/// ```swift
/// let recovery = RecoveryKey()
/// print(recovery.text)                          // "7TQ2-M9XD-…" — the user keeps it
/// let sealed = try recovery.seal(account, user: me, container: "iCloud.com.example")
/// // …on a new device:
/// let restored = try RecoveryKey(text: typed).open(sealed, user: me, container: "iCloud.com.example")
/// ```
public struct RecoveryKey: Sendable {
    let bytes: [UInt8]

    /// A new random key.
    public init() { bytes = (0..<32).map { _ in UInt8.random(in: 0...255) } }

    /// The key the user typed (dashes, spaces and case do not matter).
    public init(text: String) throws(EncryptionError) {
        guard let bytes = Base32.decode(text, byteCount: 32) else {
            throw EncryptionError(.malformed, "a recovery key is 52 characters of 0-9 and A-Z without I, L, O, U; check it")
        }
        self.bytes = bytes
    }

    /// What the user writes down.
    public var text: String { Base32.grouped(Base32.encode(bytes)) }

    /// The account's private key, sealed for storage on the server.
    public func seal(_ account: KeyAgreementIdentity, user: String, container: String) throws -> [UInt8] {
        let box = try AES.GCM.seal(account.privateBytes, using: key(user: user, container: container))
        guard let combined = box.combined else { throw EncryptionError(.malformed, "AES-GCM gave no combined form") }
        return [1] + Array(combined)
    }

    /// The account key sealed by ``seal(_:user:container:)``.
    /// - Throws: `.authenticationFailed` for another recovery key, user or container.
    public func open(_ sealed: [UInt8], user: String, container: String) throws(EncryptionError) -> KeyAgreementIdentity {
        guard sealed.count == 1 + 12 + 32 + 16, sealed[0] == 1 else {
            throw EncryptionError(.malformed, "not an account key sealed with a recovery key")
        }
        let plain: [UInt8]
        do {
            plain = Array(try AES.GCM.open(AES.GCM.SealedBox(combined: sealed[1...]), using: key(user: user, container: container)))
        } catch {
            throw .tampered("the account key sealed with this recovery key (is it the right one?)")
        }
        return try KeyAgreementIdentity(privateBytes: plain)
    }

    private func key(user: String, container: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes), salt: Array("nimbus.recovery.v1".utf8),
            info: Binding("nimbus.recovery.v1", [container, user]).bytes, outputByteCount: 32)
    }
}
