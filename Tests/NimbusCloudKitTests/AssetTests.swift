import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// `CKAsset(fileURL:)` in a field and in an array field: saving uploads the files (with
/// `perRecordProgressBlock` before the record's save block), and another device's fetch
/// downloads them, as CloudKit does.
@Suite("Assets")
struct AssetTests {
    static func file(_ name: String, _ bytes: Int, seed: UInt8) throws -> (URL, Data) {
        let data = Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0) &+ seed })
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ck-asset-\(UUID().uuidString)-\(name)")
        try data.write(to: url)
        return (url, data)
    }

    @Test(arguments: Engine.available)
    func assetsUploadWithTheRecordAndDownloadOnAnotherDevice(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let connection = try await server.connection(user: "ada")
            var other = connection
            other.deviceID = "device-b"
            let database = CKContainer(identifier: CloudKitServer.containerID, connection: connection).privateCloudDatabase
            let (photoURL, photo) = try Self.file("photo.jpg", 300_000, seed: 1)
            let (page1URL, page1) = try Self.file("page1.pdf", 1_000, seed: 2)
            let (page2URL, page2) = try Self.file("page2.pdf", 2_000, seed: 3)
            defer { for url in [photoURL, page1URL, page2URL] { try? FileManager.default.removeItem(at: url) } }

            let record = CKRecord(recordType: "Album", recordID: CKRecord.ID(recordName: "album"))
            record["photo"] = CKAsset(fileURL: photoURL)
            record["pages"] = [CKAsset(fileURL: page1URL), CKAsset(fileURL: page2URL)]
            let log = CallbackLog()
            let lastProgress = Locked<Double>(0)
            let save = CKModifyRecordsOperation(recordsToSave: [record])
            save.perRecordProgressBlock = { _, fraction in
                lastProgress.set(fraction)
                if fraction >= 1 { log.append("uploaded") }
            }
            save.perRecordSaveBlock = { id, result in log.append("saved \((try? result.get()) != nil)") }
            database.add(save)
            try await finished(save)
            #expect(log.events.last == "saved true")
            #expect(log.events.contains("uploaded"))
            #expect(lastProgress.get() == 1)

            let fetched = try await CKContainer(identifier: CloudKitServer.containerID, connection: other)
                .privateCloudDatabase.record(for: record.recordID)
            let photoAsset = try #require(fetched["photo"] as? CKAsset)
            #expect(try Data(contentsOf: try #require(photoAsset.fileURL)) == photo)
            let pages = try #require(fetched["pages"] as? [CKAsset])
            #expect(try pages.map { try Data(contentsOf: try #require($0.fileURL)) } == [page1, page2])
        }
    }
}
