import Crypto
import Foundation
import NimbusCrypto
import NimbusProtocol

/// Starting over when no device holds the account key and the recovery key is lost
/// (docs/ENCRYPTION.md, "Reset"): what was encrypted cannot be read by anyone, so its zones
/// are deleted and the account gets new keys. Zones without encrypted data are not touched.
extension EncryptionKeys {
    static let resetRecordType = "NimbusZoneReset"

    /// Resets this account's encrypted data: deletes every zone that has a key in the key
    /// directory (the data in them cannot be opened any more), marks each as reset (sync
    /// engines report its deletion as `encryptedDataReset` and upload their copies again),
    /// and makes a new account key on this device. The account's other devices find their
    /// keys missing at their next ``setUp(in:)`` and enrol again.
    /// - Returns: the zones reset, and the new recovery key: show it once.
    public func resetEncryptedData(in container: Container) async throws -> (zones: [ZoneID], recoveryKey: RecoveryKey) {
        let user = try await user(of: container)
        let database = container.privateCloudDatabase
        let device = try deviceIdentity(user: user, in: container)
        let entry = try await KeyDirectory.entry(of: user, in: container)
        guard entry?.keys.revokedDevices.contains(device.publicBytes) != true else { throw Self.revoked() }
        let records = try await directoryRecords(in: container)
        let zones = Set(
            records.filter { $0.recordType == Self.zoneKeyRecordType }.compactMap { $0.fieldValue(forKey: "zoneName")?.stringValue }
        ).sorted().map { ZoneID(zoneName: $0) }
        let account = KeyAgreementIdentity()
        let recovery = RecoveryKey()
        var accountRecord =
            records.first { $0.id == Self.accountRecordID }
            ?? Record(recordType: Self.accountRecordType, recordID: Self.accountRecordID)
        accountRecord["publicKey"] = Data(account.publicBytes)
        accountRecord["recovery"] = Data(try recovery.seal(account, user: user, container: container.identifier))
        var saving = [accountRecord]
        for zone in zones {
            var marker = Record(recordType: Self.resetRecordType, recordID: Self.resetRecordID(zone.zoneName))
            marker["zoneName"] = zone.zoneName
            saving.append(marker)
        }
        let stale = records.filter { [Self.zoneKeyRecordType, Self.deviceRecordType, Self.enrolmentRecordType].contains($0.recordType) }
        try await database.save(RecordZone(zoneID: Self.keysZone))
        let results = try await database.modifyRecords(
            saving: saving, deleting: stale.map(\.id), savePolicy: .allKeys, atomically: true)
        for case .failure(let error) in results.saveResults.values where error.code != .batchRequestFailed { throw error }
        // The markers first: whoever sees a zone's deletion finds its marker.
        if !zones.isEmpty {
            let deleted = try await database.modifyRecordZones(saving: [], deleting: zones)
            for case .failure(let error) in deleted.deleteResults.values where error.code != .zoneNotFound { throw error }
        }
        try await KeyDirectory.publish(
            PublishedKeys(user: user, sharingKey: account.publicBytes, devices: [], revokedDevices: entry?.keys.revokedDevices ?? []),
            over: entry?.record, in: container)
        try adopt(account, user: user, in: container)
        try await register(device: device.publicBytes, account: account, user: user, in: container)
        return (zones, recovery)
    }

    /// The zones whose encrypted data this account reset and that hold no new key yet: a
    /// deletion of one of them is an `encryptedDataReset`.
    public func resetZoneNames(in container: Container) async throws -> Set<String> {
        let records = try await directoryRecords(in: container)
        func zones(_ type: String) -> Set<String> {
            Set(records.filter { $0.recordType == type }.compactMap { $0.fieldValue(forKey: "zoneName")?.stringValue })
        }
        let reset = zones(Self.resetRecordType).subtracting(zones(Self.zoneKeyRecordType))
        if !reset.isEmpty, let local = try await accountKey(in: container, required: false),
            let published = records.first(where: { $0.id == Self.accountRecordID })?.fieldValue(forKey: "publicKey")?.bytesValue,
            published != Data(local.publicBytes)
        {
            // Another device reset the account: this device's key seals nothing any more.
            forgetKeys(of: container)
            resetElsewhere.insert(container.identifier)
        }
        return reset
    }

    static func resetOnAnotherDevice() -> NimbusError {
        NimbusError(
            .encryptionKeysMissing,
            "this account's encrypted data was reset on another device: this device's keys are stale; enrol it "
                + "with a code from that device, or with the new recovery key")
    }

    static func resetRecordID(_ zoneName: String) -> Record.ID {
        Record.ID(
            recordName: "reset-" + hexString(Array(SHA256.hash(data: Data(zoneName.utf8)).prefix(16))), zoneID: keysZone)
    }
}
