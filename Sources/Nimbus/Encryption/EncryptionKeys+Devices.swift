import Crypto
import Foundation
import NimbusCrypto
import NimbusProtocol

/// A user's devices: each has its own key pair (its public half in the public key directory,
/// its private half beside the account key in the ``DeviceKeyStore``), and the account key
/// wrapped to it in the user's private key directory, so that a revocation can hand a new
/// account key to every device but the revoked one (docs/ENCRYPTION.md, "Devices").
extension EncryptionKeys {
    static let deviceRecordType = "NimbusDeviceKey"

    /// This device's public key, as the key directory lists it.
    public func devicePublicKey(in container: Container) async throws -> [UInt8] {
        try deviceIdentity(user: try await user(of: container), in: container).publicBytes
    }

    /// The entry `user` published in the key directory; `nil` when they have none (they have
    /// not set up encryption).
    public func publishedKeys(of user: String, in container: Container) async throws -> PublishedKeys? {
        try await KeyDirectory.entry(of: user, in: container)?.keys
    }

    /// Revokes one of this account's devices: its key leaves the key directory, the account
    /// key is replaced by a new one wrapped to every other device (they take it at their next
    /// ``setUp(in:)``), every zone key is sealed again under the new account key and each zone's
    /// current key is rotated, so the revoked device can read nothing written after. Its later
    /// enrolments are refused.
    /// - Returns: the new recovery key (the old one no longer opens the account key): show it once.
    /// - Throws: ``NimbusError/Code/invalidArguments`` for this device itself or a key the
    ///   directory does not list.
    public func revokeDevice(publicKey: [UInt8], in container: Container) async throws -> RecoveryKey {
        let user = try await user(of: container)
        guard let old = try await accountKey(in: container, required: true) else {
            throw NimbusError(.encryptionKeysMissing, "no account key")
        }
        guard try publicKey != deviceIdentity(user: user, in: container).publicBytes else {
            throw NimbusError(.invalidArguments, "a device cannot revoke itself: revoke it from another device")
        }
        guard let (entry, entryRecord) = try await KeyDirectory.entry(of: user, in: container),
            entry.devices.contains(publicKey)
        else {
            throw NimbusError(.invalidArguments, "the key directory lists no such device of this account")
        }
        let account = KeyAgreementIdentity()
        let database = container.privateCloudDatabase
        try await resealZoneKeys(from: old, to: account, user: user, in: container)
        let remaining = entry.devices.filter { $0 != publicKey }
        let records = try remaining.map { try deviceRecord($0, account: account, user: user, in: container) }
        _ = try await database.modifyRecords(
            saving: records, deleting: [Self.deviceRecordID(publicKey)], savePolicy: .allKeys, atomically: true)
        let recovery = RecoveryKey()
        guard var accountRecord = try await accountRecord(in: database) else {
            throw NimbusError(.encryptionKeysMissing, "this account has no published account key")
        }
        accountRecord["publicKey"] = Data(account.publicBytes)
        accountRecord["recovery"] = Data(try recovery.seal(account, user: user, container: container.identifier))
        try await database.save(accountRecord)
        try await KeyDirectory.publish(
            PublishedKeys(
                user: user, sharingKey: account.publicBytes, devices: remaining,
                revokedDevices: entry.revokedDevices + [publicKey]),
            over: entryRecord, in: container)
        try adopt(account, user: user, in: container)
        return recovery
    }

    // MARK: - Internals

    static func deviceRecordID(_ publicKey: [UInt8]) -> Record.ID {
        Record.ID(recordName: "device-" + hexString(Array(SHA256.hash(data: Data(publicKey)).prefix(16))), zoneID: keysZone)
    }

    /// What the account key wrapped to a device is bound to.
    static func deviceContext(_ container: Container, _ user: String, accountPublicKey: [UInt8]) -> [String] {
        ["device", container.identifier, user, hexString(accountPublicKey)]
    }

    /// This device's key pair, made the first time and kept in the store beside the account key.
    func deviceIdentity(user: String, in container: Container) throws -> KeyAgreementIdentity {
        let name = user + "#device"
        if let bytes = try store.accountKey(user: name, container: container.identifier) {
            return try KeyAgreementIdentity(privateBytes: bytes)
        }
        let identity = KeyAgreementIdentity()
        try store.setAccountKey(identity.privateBytes, user: name, container: container.identifier)
        return identity
    }

    /// Lists this device in the key directory with the account's public key, and wraps the
    /// account key to it, unless both are there already.
    func registerThisDevice(account: KeyAgreementIdentity, user: String, in container: Container) async throws {
        let device = try deviceIdentity(user: user, in: container)
        if let entry = try await KeyDirectory.entry(of: user, in: container)?.keys, entry.sharingKey == account.publicBytes,
            entry.devices.contains(device.publicBytes)
        {
            return
        }
        try await register(device: device.publicBytes, account: account, user: user, in: container)
    }

    /// Wraps the account key to `device` in the private directory and lists the device (and
    /// the account's public key) in the public one.
    /// - Throws: ``NimbusError/Code/permissionFailure`` for a device the user revoked.
    func register(device: [UInt8], account: KeyAgreementIdentity, user: String, in container: Container) async throws {
        let existing = try await KeyDirectory.entry(of: user, in: container)
        let revoked = existing?.keys.revokedDevices ?? []
        guard !revoked.contains(device) else { throw Self.revoked() }
        try await container.privateCloudDatabase.save(
            try deviceRecord(device, account: account, user: user, in: container), savePolicy: .allKeys)
        let devices = (existing?.keys.devices ?? []).filter { $0 != device } + [device]
        try await KeyDirectory.publish(
            PublishedKeys(user: user, sharingKey: account.publicBytes, devices: devices, revokedDevices: revoked),
            over: existing?.record, in: container)
    }

    static func revoked() -> NimbusError {
        NimbusError(
            .permissionFailure,
            "this device was revoked by its account: it is not enrolled again; use another device, or reset the "
                + "device's app data and set it up as a new device")
    }

    private func deviceRecord(_ device: [UInt8], account: KeyAgreementIdentity, user: String, in container: Container)
        throws -> Record
    {
        var record = Record(recordType: Self.deviceRecordType, recordID: Self.deviceRecordID(device))
        record["publicKey"] = Data(device)
        record["accountKey"] = Data(account.publicBytes)
        let wrapped = try WrappedKey.wrap(
            secret: account.privateBytes, to: device,
            context: Self.deviceContext(container, user, accountPublicKey: account.publicBytes))
        record["account"] = Data(wrapped.bytes)
        return record
    }

    /// After another device replaced the account key (a revocation): takes the new one from
    /// this device's record in the private directory. `false` when none is wrapped to this device.
    /// - Throws: ``NimbusError/Code/permissionFailure`` when this device was revoked.
    func adoptRotatedAccount(publicKey: [UInt8], user: String, in container: Container) async throws -> Bool {
        let device = try deviceIdentity(user: user, in: container)
        if let entry = try await KeyDirectory.entry(of: user, in: container)?.keys,
            entry.revokedDevices.contains(device.publicBytes)
        {
            throw Self.revoked()
        }
        let record: Record
        do {
            record = try await container.privateCloudDatabase.record(for: Self.deviceRecordID(device.publicBytes))
        } catch let error as NimbusError where error.code == .unknownItem {
            return false
        }
        guard record.fieldValue(forKey: "accountKey")?.bytesValue == Data(publicKey),
            let wrapped = record.fieldValue(forKey: "account")?.bytesValue
        else { return false }
        let account: KeyAgreementIdentity
        do {
            account = try KeyAgreementIdentity(
                privateBytes: WrappedKey(bytes: Array(wrapped)).unwrap(
                    with: device, context: Self.deviceContext(container, user, accountPublicKey: publicKey)))
        } catch {
            throw NimbusError(.decryptionFailed, "the account key wrapped to this device does not open: \(error.message)")
        }
        guard account.publicBytes == publicKey else {
            throw NimbusError(.decryptionFailed, "the account key wrapped to this device is not the account's published key")
        }
        try adopt(account, user: user, in: container)
        return true
    }

    /// Makes `account` this device's account key and forgets the zone keys it cached.
    func adopt(_ account: KeyAgreementIdentity, user: String, in container: Container) throws {
        try store.setAccountKey(account.privateBytes, user: user, container: container.identifier)
        forgetKeys(of: container)
        accounts[container.identifier] = account
    }

    /// Forgets the account and zone keys this device cached for `container`.
    func forgetKeys(of container: Container) {
        accounts[container.identifier] = nil
        resetElsewhere.remove(container.identifier)
        let prefix = "\(container.identifier)\u{0}"
        for key in Array(zoneKeys.keys) where key.hasPrefix(prefix) { zoneKeys[key] = nil }
        for key in Array(currentKeys.keys) where key.hasPrefix(prefix) { currentKeys[key] = nil }
    }

    /// Every record of the user's private key directory.
    func directoryRecords(in container: Container) async throws -> [Record] {
        var records: [Record] = []
        var token: ServerChangeToken?
        while true {
            let page: RecordZoneChanges
            do {
                page = try await container.privateCloudDatabase.recordZoneChanges(inZoneWith: Self.keysZone, since: token)
            } catch let error as NimbusError where error.code == .zoneNotFound {
                return []
            }
            records += page.modifications
            token = page.changeToken
            if !page.moreComing { return records }
        }
    }

    /// Seals every zone key again under `account`, and gives each zone a new current key.
    private func resealZoneKeys(
        from old: KeyAgreementIdentity, to account: KeyAgreementIdentity, user: String, in container: Container
    ) async throws {
        var resealed: [Record] = []
        for var record in try await directoryRecords(in: container) where record.recordType == Self.zoneKeyRecordType {
            guard let zone = record.fieldValue(forKey: "zoneName")?.stringValue,
                let sealed = record.fieldValue(forKey: "wrapped")?.bytesValue
            else { continue }
            let context = ["zone", container.identifier, zone, user]
            if record.id == Self.zoneKeyRecordID(zone, keyID: nil) {
                // The zone's current key: a new one the revoked device never held.
                let (_, byID) = try Self.rotate(&record, zone: zone, account: account, context: context)
                resealed += [record, byID]
            } else {
                let key = try SelfWrappedKey.unwrap(Array(sealed), account: old, context: context)
                record["wrapped"] = Data(try SelfWrappedKey.wrap(key, account: account, context: context))
                resealed.append(record)
            }
        }
        guard !resealed.isEmpty else { return }
        let results = try await container.privateCloudDatabase.modifyRecords(
            saving: resealed, savePolicy: .allKeys, atomically: true)
        for case .failure(let error) in results.saveResults.values where error.code != .batchRequestFailed { throw error }
    }

    /// Gives a zone a new current key: `current` (the zone's current-key record) names it and
    /// lists it with the older ones; returns it and its by-ID record, to save with `current`.
    static func rotate(_ current: inout Record, zone: String, account: KeyAgreementIdentity, context: [String]) throws
        -> (ZoneKey, Record)
    {
        let ids = keyIDs(of: current)
        let key = ZoneKey()
        let wrapped = Data(try SelfWrappedKey.wrap(key, account: account, context: context))
        current["keyID"] = key.idHex
        current["wrapped"] = wrapped
        current.setFieldValue(.list(elementType: .string, (ids + [key.idHex]).map { .string($0) }), forKey: "keyIDs")
        var byID = Record(recordType: zoneKeyRecordType, recordID: zoneKeyRecordID(zone, keyID: key.id))
        byID["zoneName"] = zone
        byID["keyID"] = key.idHex
        byID["wrapped"] = wrapped
        return (key, byID)
    }

    /// The IDs (hex) of every key a zone's current-key record lists, its current one included.
    static func keyIDs(of current: Record) -> [String] {
        var ids: [String] = []
        if case .list(_, let values)? = current.fieldValue(forKey: "keyIDs") { ids = values.compactMap(\.stringValue) }
        if let id = current.fieldValue(forKey: "keyID")?.stringValue, !ids.contains(id) { ids.append(id) }
        return ids
    }
}
