import Foundation
import Nimbus

extension CKContainer {
    /// Nimbus's step before ``CKRecord/encryptedValues`` (CloudKit keeps its keys in iCloud
    /// Keychain; Nimbus keeps them with ``NimbusConnection/encryption``): on the account's first
    /// device, makes its keys and returns the recovery key's text for the user to keep; on a
    /// device set up before, returns `nil`.
    /// - Throws: `CKError` when no keys are configured, or when the account was set up on
    ///   another device (restore with ``restoreEncryption(recoveryKey:)``).
    public func setUpEncryption() async throws -> String? {
        let (container, keys) = try encryptionKeys()
        return try await mappingErrors { try await keys.setUp(in: container)?.text }
    }

    /// Nimbus: restores this device's encryption keys from the recovery key the user kept.
    public func restoreEncryption(recoveryKey: String) async throws {
        let (container, keys) = try encryptionKeys()
        try await mappingErrors { try await keys.restore(recoveryKey: recoveryKey, in: container) }
    }

    private func encryptionKeys() throws(CKError) -> (Container, EncryptionKeys) {
        let container = try configured()
        guard let keys = container.encryption else {
            throw CKError(
                .notAuthenticated,
                message: "no encryption keys on this device: set NimbusConnection.encryption (or NIMBUS_KEYS_DIRECTORY)")
        }
        return (container, keys)
    }
}
