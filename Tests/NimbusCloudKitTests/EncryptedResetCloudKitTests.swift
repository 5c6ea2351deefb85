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
        private(set) var fetchedZones: Set<String> = []

        func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async {
            if case .fetchedRecordZoneChanges(let changes) = event {
                fetchedZones.formUnion(changes.modifications.map(\.recordID.zoneID.zoneName))
            }
            guard case .fetchedDatabaseChanges(let changes) = event else { return }
            fetchedZones.formUnion(changes.modifications.map(\.zoneID.zoneName))
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
            // Nimbus's zone of the user's keys exists but CloudKit's API does not list it
            // (CloudKit keeps keys in iCloud Keychain): not in the zones, the database's
            // changes, or what the engine fetched.
            let keysZone = CKRecordZone.ID(zoneName: EncryptionKeys.keysZoneName)
            _ = try await phone.privateCloudDatabase.recordZone(for: keysZone)
            #expect(!(try await phone.privateCloudDatabase.allRecordZones()).contains { $0.zoneID == keysZone })
            let everything = try await phone.privateCloudDatabase.databaseChanges(since: nil)
            #expect(Set(everything.modifications.map(\.zoneID.zoneName)).isSuperset(of: ["Notes", "Scratch", "Old"]))
            #expect(!everything.modifications.contains { $0.zoneID == keysZone })
            #expect(!(await recorder.fetchedZones).contains(EncryptionKeys.keysZoneName))
            let before = try await phone.privateCloudDatabase.databaseChanges(since: nil).changeToken

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

            // The same reasons through the database's own API and CKFetchDatabaseChangesOperation's
            // blocks (the reset zone to its own block, not the deleted one's).
            let changes = try await phone.privateCloudDatabase.databaseChanges(since: before)
            let deletions = Dictionary(uniqueKeysWithValues: changes.deletions.map { ($0.zoneID.zoneName, $0.reason) })
            #expect(deletions == ["Notes": .encryptedDataReset, "Old": .deleted])
            let blocks = Locked<[String]>([])
            let operation = CKFetchDatabaseChangesOperation(previousServerChangeToken: before)
            operation.recordZoneWithIDWasDeletedBlock = { id in blocks.update { $0.append("deleted \(id.zoneName)") } }
            operation.recordZoneWithIDWasPurgedBlock = { id in blocks.update { $0.append("purged \(id.zoneName)") } }
            operation.recordZoneWithIDWasDeletedDueToUserEncryptedDataResetBlock = { id in
                blocks.update { $0.append("reset \(id.zoneName)") }
            }
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
                operation.fetchDatabaseChangesResultBlock = { result in done.resume(with: result.map { _ in () }) }
                phone.privateCloudDatabase.add(operation)
            }
            #expect(blocks.get().sorted() == ["deleted Old", "reset Notes"])

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
