import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusSync
import NimbusTestSupport
import Testing

/// A reset of an account's encrypted data, seen by the sync engine of another device: the
/// encrypted zone's deletion has the reason `encryptedDataReset`; other zones are untouched.
@Suite("Encrypted data reset")
struct EncryptedResetTests {
    static let journal = "Journal"
    static let plain = "Plain"

    static var configuration: SyncConfiguration {
        var configuration = SyncConfiguration(zones: [journal, plain], subscriptionID: nil)
        configuration.encryptedFields = ["Entry": ["body"]]
        return configuration
    }

    @Test(arguments: Engine.available)
    func aResetZoneIsReportedAsEncryptedDataResetAndOtherZonesStay(engine: Engine) async throws {
        try await SyncHarness.with(engine: engine) { harness in try await Self.reset(harness) }
    }

    static func reset(_ harness: SyncHarness) async throws {
        var phone = harness.container(device: "phone")
        phone.encryption = EncryptionKeys(store: FileKeyStore(directory: URL(fileURLWithPath: "\(harness.directory)/phone/keys")))
        try await phone.encryption!.setUp(in: phone)
        let engine = SyncEngine(
            service: DatabaseSyncService(database: phone.privateCloudDatabase),
            store: try LocalStore(path: harness.storePath("phone"), clock: SyncHarness.noWaiting),
            configuration: configuration)
        try await engine.start()
        try engine.store.write { _, outbox in
            try outbox.save(LocalRecord(zoneName: journal, recordName: "e1", recordType: "Entry", fields: ["body": "MARKER-secret"]))
            try outbox.save(LocalRecord(zoneName: plain, recordName: "n1", recordType: "Note", fields: ["text": "kept"]))
        }
        try await engine.sendChanges()
        try await engine.fetchChanges()

        // A new device, with neither another device nor the recovery key at hand: keys missing.
        var tablet = harness.container(device: "tablet")
        tablet.encryption = EncryptionKeys(store: FileKeyStore(directory: URL(fileURLWithPath: "\(harness.directory)/tablet/keys")))
        await #expect { try await tablet.encryption!.setUp(in: tablet) } throws: {
            ($0 as? NimbusError)?.code == .encryptionKeysMissing
        }
        #expect(await (try? tablet.privateCloudDatabase.record(for: Nimbus.Record.ID(recordName: "e1", zoneID: ZoneID(zoneName: journal)))) == nil)
        let (zones, recovery) = try await tablet.encryption!.resetEncryptedData(in: tablet)
        #expect(zones == [ZoneID(zoneName: journal)])
        #expect(!recovery.text.isEmpty)
        #expect(try await tablet.encryption!.setUp(in: tablet) == nil)

        // The phone's engine: Journal deleted for an encrypted-data reset; Plain untouched.
        let events = engine.events()
        let deleted = Task {
            var reasons: [String: ZoneDeletionReason] = [:]
            for await event in events {
                if case .zoneDeleted(let zone, let reason) = event { reasons[zone] = reason }
                if case .stateSaved = event { break }
            }
            return reasons
        }
        try await engine.fetchChanges()
        #expect(await deleted.value == [journal: .encryptedDataReset])
        #expect(try engine.store.record(zone: plain, name: "n1")?.fields["text"] == "kept")
        #expect(try await tablet.privateCloudDatabase.record(for: Nimbus.Record.ID(recordName: "n1", zoneID: ZoneID(zoneName: plain)))["text"] == "kept")

        // The phone's keys are stale: it seals nothing with them and says why.
        await #expect { try await phone.privateCloudDatabase.save(Self.entry("e2")) } throws: {
            ($0 as? NimbusError)?.code == .encryptionKeysMissing
        }
        // Enrolled again (here by the new recovery key), it writes what the tablet reads.
        try await phone.encryption!.restore(recoveryKey: recovery.text, in: phone)
        try await phone.privateCloudDatabase.save(RecordZone(zoneName: journal))
        try await phone.privateCloudDatabase.save(Self.entry("e2"))
        let e2 = try await tablet.privateCloudDatabase.record(for: Nimbus.Record.ID(recordName: "e2", zoneID: ZoneID(zoneName: journal)))
        #expect(e2.encryptedValues["body"] as String? == "MARKER-again")
    }

    static func entry(_ name: String) -> Nimbus.Record {
        var record = Nimbus.Record(recordType: "Entry", recordID: Nimbus.Record.ID(recordName: name, zoneID: ZoneID(zoneName: journal)))
        record.encryptedValues["body"] = "MARKER-again"
        return record
    }
}
