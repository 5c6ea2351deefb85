import Foundation
import NimbusCrypto
import NimbusProtocol

/// Keys that changed on another device (docs/ENCRYPTION.md, "Stale keys"): a zone's key
/// rotated when a participant was removed or a device revoked, or the account key replaced
/// by a revocation. A device takes the new keys while it runs, with no new ``setUp(in:)``:
/// - a value sealed with a key it does not know makes it read that key from the directory
///   and forget the current key it cached, so its next save takes the new one;
/// - a key directory record that a fetch brings (a sync engine's fetch of the private
///   database) makes it forget what it cached of that zone or account;
/// - a directory key that no longer opens with its cached account key makes it take the
///   new account key wrapped to it, once, before it retries; the device revoked learns so
///   there (``NimbusError/Code/permissionFailure``), forgets its keys and seals nothing more;
/// - in a zone shared with participants it reads the zone's current key at each save, as
///   participants read their grant at each save: no one writes under a key that a removed
///   participant holds.
extension EncryptionKeys {
    /// Runs `body` with this account's key and the zone's owner; when the key directory does
    /// not open with the cached account key (``NimbusError/Code/decryptionFailed``) because
    /// another device replaced it, takes the new one and runs `body` once more.
    func withCurrentAccount<T>(
        of zoneID: ZoneID, in database: Database,
        _ body: (KeyAgreementIdentity, String) async throws -> T
    ) async throws -> T {
        let (account, owner) = try await owned(zoneID, in: database)
        do {
            return try await body(account, owner)
        } catch let error as NimbusError where error.code == .decryptionFailed {
            let adopted: Bool
            do {
                adopted = try await adoptNewerAccount(than: account, user: owner, in: database.container)
            } catch let refusal as NimbusError where refusal.code == .permissionFailure {
                // This device was revoked: it forgets its keys and writes nothing more.
                forgetKeys(of: database.container)
                revokedHere.insert(database.container.identifier)
                throw refusal
            }
            guard adopted else { throw error }
            let (fresh, owner) = try await owned(zoneID, in: database)
            return try await body(fresh, owner)
        }
    }

    /// Takes the account key another device published after `account` (a revocation), from
    /// this device's record in the private directory; `false` when the published key is
    /// `account` (nothing changed) or none is wrapped to this device.
    /// - Throws: ``NimbusError/Code/permissionFailure`` when this device was the one revoked.
    func adoptNewerAccount(than account: KeyAgreementIdentity, user: String, in container: Container) async throws -> Bool {
        guard let published = try await accountRecord(in: container.privateCloudDatabase),
            let publicKey = published.fieldValue(forKey: "publicKey")?.bytesValue,
            Array(publicKey) != account.publicBytes
        else { return false }
        return try await adoptRotatedAccount(publicKey: Array(publicKey), user: user, in: container)
    }

    /// Notes a record of the key directory that a fetch of `database` brought: this device
    /// forgets the current key it cached for that zone (a zone key record), or every key it
    /// cached for the account (an account or device record), and reads them again when next
    /// needed. Other records are ignored.
    func noteFetched(_ record: Record, in database: Database) {
        guard database.scope == .private, record.id.zoneID.zoneName == Self.keysZoneName else { return }
        switch record.recordType {
        case Self.zoneKeyRecordType:
            if let zone = record.fieldValue(forKey: "zoneName")?.stringValue {
                currentKeys[Self.cacheKey(database, zone)] = nil
            }
        case Self.accountRecordType, Self.deviceRecordType:
            let prefix = "\(database.container.identifier)\u{0}"
            accounts[database.container.identifier] = nil
            for key in Array(currentKeys.keys) where key.hasPrefix(prefix) { currentKeys[key] = nil }
        default:
            break
        }
    }

    /// Whether ``noteFetched(_:in:)`` has anything to note about `record` (a cheap test made
    /// before the actor is asked).
    static func isKeyDirectoryRecord(_ record: Record) -> Bool {
        record.id.zoneID.zoneName == keysZoneName
            && [zoneKeyRecordType, accountRecordType, deviceRecordType].contains(record.recordType)
    }
}
