import Foundation
import Nimbus
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// CKSyncEngine reports the zones an encrypted-data reset deleted with the reason
/// `.encryptedDataReset`, and other deleted zones as `.deleted`.
@Suite("CKSyncEngine encryptedDataReset")
struct EncryptedResetCloudKitTests {
    actor Recorder: CKSyncEngineDelegate {
        private(set) var reasons: [String: String] = [:]

        func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async {
            guard case .fetchedDatabaseChanges(let changes) = event else { return }
            for deletion in changes.deletions { reasons[deletion.zoneID.zoneName] = "\(deletion.reason)" }
        }

        func nextRecordZoneChangeBatch(
            _ context: CKSyncEngine.SendChangesContext, syncEngine: CKSyncEngine
        ) async -> CKSyncEngine.RecordZoneChangeBatch? { nil }
    }

    @Test(arguments: Engine.available)
    func aResetZoneIsDeletedForAnEncryptedDataReset(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let phone = try await EncryptedValuesCloudKitTests.container(server, user: "ada")
            _ = try await phone.setUpEncryption()
            let secret = CKRecordZone(zoneName: "Notes")
            let plain = CKRecordZone(zoneName: "Scratch")
            let other = CKRecordZone(zoneName: "Old")
            _ = try await phone.privateCloudDatabase.modifyRecordZones(saving: [secret, plain, other], deleting: [])
            let note = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "n1", zoneID: secret.zoneID))
            note.encryptedValues["secret"] = "MARKER-pin"
            _ = try await phone.privateCloudDatabase.save(note)
            let recorder = Recorder()
            let engine = CKSyncEngine(CKSyncEngine.Configuration(
                database: phone.privateCloudDatabase, stateSerialization: nil, delegate: recorder))
            try await engine.fetchChanges()

            // Another device of Ada's, with no keys and no recovery key, resets; Ada deletes
            // another zone herself.
            let connection = try await server.connection(user: "ada")
            var tablet = Container(
                identifier: CloudKitServer.containerID, baseURL: connection.serverURL,
                credentials: .apiToken(connection.apiToken, webAuthToken: connection.webAuthToken), deviceID: "tablet")
            tablet.encryption = EncryptionKeys(
                store: FileKeyStore(
                    directory: FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-ck-keys-\(UUID().uuidString)")))
            let reset = try await tablet.encryption!.resetEncryptedData(in: tablet)
            #expect(reset.zones.map(\.zoneName) == ["Notes"])
            _ = try await phone.privateCloudDatabase.deleteRecordZone(withID: other.zoneID)

            try await engine.fetchChanges()
            let reasons = await recorder.reasons
            #expect(reasons == ["Notes": "encryptedDataReset", "Old": "deleted"])
            _ = try await phone.privateCloudDatabase.recordZone(for: plain.zoneID)

            // Saving into the zones: zoneNotFound, with CKErrorUserDidResetEncryptedDataKey for
            // the reset one only (the encryption sample checks it).
            for (zone, reset) in [(secret.zoneID, true), (other.zoneID, false)] {
                let record = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "n2", zoneID: zone))
                record["title"] = "After the reset"
                do {
                    _ = try await phone.privateCloudDatabase.save(record)
                    Issue.record("saved into the deleted zone \(zone.zoneName)")
                } catch let error as CKError {
                    #expect(error.code == .zoneNotFound)
                    #expect((error.userInfo[CKErrorUserDidResetEncryptedDataKey] as? NSNumber)?.boolValue == (reset ? true : nil))
                }
            }
        }
    }
}
