import Foundation
import Nimbus
import NimbusCloudKit
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `CKAsset` with encryption set up: encrypted like every CloudKit asset, read back as the
/// plain file on the user's devices.
@Suite("Encrypted CKAsset")
struct EncryptedAssetsCloudKitTests {
    @Test(arguments: Engine.available)
    func aCKAssetIsEncryptedOnTheDeviceAndReadBackPlain(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let phone = try await EncryptedValuesCloudKitTests.container(server, user: "ada")
            let recovery = try #require(try await phone.setUpEncryption())
            let zone = CKRecordZone(zoneName: "Photos")
            _ = try await phone.privateCloudDatabase.save(zone)
            let bytes = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 % 251) } + Array("MARKER-ckasset".utf8))
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("ck-\(UUID().uuidString).jpg")
            try bytes.write(to: file)
            let photo = CKRecord(recordType: "Photo", recordID: CKRecord.ID(recordName: "p1", zoneID: zone.zoneID))
            photo["image"] = CKAsset(fileURL: file)
            _ = try await phone.privateCloudDatabase.save(photo)

            // The server's record holds a wrapped key beside the ciphertext's checksum.
            let owner = try await phone.userRecordID().recordName
            let stored = try await server.server.store.lookupRecords(
                ["p1"], zone: "Photos",
                in: DatabaseKey(container: CloudKitServer.containerID, environment: .development, scope: .private, owner: owner))
            let fields = try #require(stored.first??.fieldsJSON)
            #expect(fields.contains("wrappingKey") && fields.contains("referenceChecksum"))

            // Another device of the user, restored, fetches the record with its file opened.
            let laptop = try await EncryptedValuesCloudKitTests.container(server, user: "ada")
            try await laptop.restoreEncryption(recoveryKey: recovery)
            let fetched = try await laptop.privateCloudDatabase.record(for: photo.recordID)
            let asset = try #require(fetched["image"] as? CKAsset)
            let local = try #require(asset.fileURL)
            #expect(try Data(contentsOf: local) == bytes)
        }
    }
}
