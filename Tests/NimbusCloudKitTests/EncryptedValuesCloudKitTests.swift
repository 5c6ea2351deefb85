import Foundation
import Nimbus
import NimbusCloudKit
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `CKRecord.encryptedValues` sealed through the SDK: the server holds envelopes, the device
/// reads its values back, and another device reads them once restored.
@Suite("CKRecord.encryptedValues")
struct EncryptedValuesCloudKitTests {
    static func container(_ server: CloudKitServer, user: String) async throws -> CKContainer {
        var connection = try await server.connection(user: user)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-ck-keys-\(UUID().uuidString)")
        connection.encryption = EncryptionKeys(store: FileKeyStore(directory: directory))
        return CKContainer(identifier: CloudKitServer.containerID, connection: connection)
    }

    /// Every file under `directory`, one after the other (a SQLite database and its WAL).
    static func contents(under directory: String) throws -> Data {
        var all = Data()
        let root = URL(fileURLWithPath: directory)
        let files = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]))
        for case let file as URL in files where (try? file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
            all.append(try Data(contentsOf: file))
        }
        return all
    }

    @Test(arguments: Engine.available)
    func encryptedValuesAreSealedOnTheDevice(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let phone = try await Self.container(server, user: "ada")
            let recovery = try #require(try await phone.setUpEncryption())
            let zone = CKRecordZone(zoneName: "Notes")
            _ = try await phone.privateCloudDatabase.save(zone)
            let note = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "n1", zoneID: zone.zoneID))
            note["title"] = "Groceries"
            note.encryptedValues["secret"] = "MARKER-pin-1234"
            note.encryptedValues["count"] = 7
            #expect(note.encryptedValues.allKeys() == ["count", "secret"])
            #expect(Set(note.encryptedValues.changedKeys()) == ["count", "secret"])
            let saved = try await phone.privateCloudDatabase.save(note)
            #expect(saved.encryptedValues["secret"] as? String == "MARKER-pin-1234")

            // What the server stores: ENCRYPTED_BYTES, never the text.
            let owner = try await phone.userRecordID().recordName
            let stored = try await server.server.store.lookupRecords(
                ["n1"], zone: "Notes",
                in: DatabaseKey(container: CloudKitServer.containerID, environment: .development, scope: .private, owner: owner))
            let fields = try #require(stored.first??.fieldsJSON)
            #expect(fields.contains("ENCRYPTED_BYTES"))
            #expect(!fields.contains("MARKER"))
            // And in the server's database files: the plain field's text is there, the
            // encrypted value's is not.
            if case .sqlite(let directory) = server.storage {
                let files = try Self.contents(under: directory)
                #expect(files.range(of: Data("Groceries".utf8)) != nil)
                #expect(files.range(of: Data("MARKER-pin-1234".utf8)) == nil)
            }

            let fetched = try await phone.privateCloudDatabase.record(for: note.recordID)
            #expect(fetched.encryptedValues["secret"] as? String == "MARKER-pin-1234")
            #expect(fetched.encryptedValues["count"] as? Int == 7)
            #expect(fetched["title"] as? String == "Groceries")

            // Another device of the same user: a CKError until restored, then the values.
            let laptop = try await Self.container(server, user: "ada")
            await #expect(throws: CKError.self) { _ = try await laptop.privateCloudDatabase.record(for: note.recordID) }
            try await laptop.restoreEncryption(recoveryKey: recovery)
            let onLaptop = try await laptop.privateCloudDatabase.record(for: note.recordID)
            #expect(onLaptop.encryptedValues["secret"] as? String == "MARKER-pin-1234")
        }
    }
}
