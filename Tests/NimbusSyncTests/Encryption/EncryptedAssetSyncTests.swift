import Foundation
import GRDB
import Nimbus
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusSync
import NimbusTestSupport
import Testing

/// An encrypted photo through the sync engine, on both storage engines: the server's asset
/// files (SQLite data directory) or asset tables (PostgreSQL) hold only ciphertext, a second
/// device of the user restored by the recovery key reads the photo, another user cannot.
@Suite("Sync with encrypted assets")
struct EncryptedAssetSyncTests {
    static let zone = "Album"
    static var configuration: SyncConfiguration {
        var configuration = SyncConfiguration(zones: [zone], subscriptionID: nil)
        configuration.encryptedFields = ["Photo": ["caption"]]
        return configuration
    }

    static func device(_ harness: SyncHarness, _ name: String, webToken: String? = nil) throws -> (SyncEngine, Container) {
        try harness.encryptedEngine(name, configuration: configuration, webToken: webToken)
    }

    /// The app was killed halfway through an encrypted upload that an earlier build began (in
    /// asset format 2, which the store's migration records for uploads kept before formats
    /// were): after the update, the relaunched engine continues it in format 2, sending only
    /// the rest, and the user's second device opens the photo. Continued in this build's own
    /// format, the file would be half of each and open nowhere.
    @Test func anUploadAnEarlierBuildBeganResumesInItsFormatAfterTheUpdate() async throws {
        try await SyncHarness.with { harness in
            var photo = [UInt8](repeating: 0, count: 1_000_000)
            for index in photo.indices { photo[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 13) }
            let file = URL(fileURLWithPath: "\(harness.directory)/older.jpg")
            try FileManager.default.createDirectory(atPath: harness.directory, withIntermediateDirectories: true)
            try Data(photo).write(to: file)
            let stalling = StallingUploads(stallAt: 0.5)
            let recovery: RecoveryKey
            do {
                let (a, phone, older) = try harness.encryptedDevice("A", configuration: Self.configuration, assetTransport: stalling)
                recovery = try #require(try await phone.encryption!.setUp(in: phone))
                older.sealAssets(inFormat: 2)
                try await a.start()
                try a.store.write { _, outbox in
                    try outbox.save(LocalRecord(
                        zoneName: Self.zone, recordName: "p1", recordType: "Photo",
                        fields: ["photo": Nimbus.Asset(fileURL: file).fieldValue, "title": "Older"]))
                }
                let send = Task { try await a.sendChanges() }
                try await stalling.waitUntilStalled()
                stalling.kill()
                _ = await send.result
                #expect(try a.store.pendingCount() == 1)
                // What the earlier build's row reads as once migrated.
                try a.store.write { db, _ in try db.execute(sql: "UPDATE nimbus_asset_uploads SET format = 2") }
            }

            let counting = StallingUploads(stallAt: nil)
            let (relaunched, _, service) = try harness.encryptedDevice(
                "A", configuration: Self.configuration, assetTransport: counting)
            try await relaunched.start()
            #expect(try relaunched.store.pendingCount() == 0)
            #expect(service.calls("uploadAsset:resuming") == 1)
            #expect(service.askedAssetFormats == [2])
            // Only the rest went out (its body, made by the SDK, is a file of its own).
            #expect(counting.uploadedRanges.count == 1 && counting.uploadedRanges.first!.count < 600_000)

            let (b, laptop) = try Self.device(harness, "B")
            try await laptop.encryption!.restore(recoveryKey: recovery.text, in: laptop)
            try await b.start()
            try await b.fetchChanges()
            let record = try #require(try b.store.record(zone: Self.zone, name: "p1"))
            let onLaptop = try #require(try await b.assetFile(for: record, field: "photo"))
            #expect(try Data(contentsOf: onLaptop) == Data(photo))
        }
    }

    @Test(arguments: Engine.available)
    func anEncryptedPhotoSyncsAndTheServerHoldsOnlyCiphertext(engine: Engine) async throws {
        try await SyncHarness.with(engine: engine) { harness in try await Self.syncAndInspect(harness, engine: engine) }
    }

    static func syncAndInspect(_ harness: SyncHarness, engine: Engine) async throws {
        let marker = "MARKER-pixels-\(UUID().uuidString.prefix(8))"
        let caption = "MARKER-caption-\(UUID().uuidString.prefix(8))"
        var photo = Data()
        while photo.count < 200_000 { photo.append(contentsOf: Array("\(marker) \(photo.count);".utf8)) }
        let file = URL(fileURLWithPath: "\(harness.directory)/beach.jpg")
        try FileManager.default.createDirectory(atPath: harness.directory, withIntermediateDirectories: true)
        try photo.write(to: file)

        let (a, phone) = try Self.device(harness, "A")
        let recovery = try #require(try await phone.encryption!.setUp(in: phone))
        try await a.start()
        try a.store.write { _, outbox in
            try outbox.save(LocalRecord(
                zoneName: Self.zone, recordName: "p1", recordType: "Photo",
                fields: ["photo": Nimbus.Asset(fileURL: file).fieldValue, "caption": .string(caption), "title": "Beach"]))
        }
        try await a.sendChanges()
        #expect(try a.store.pendingCount() == 0)

        // A second device of the user, restored by the recovery key, reads the photo.
        let (b, laptop) = try Self.device(harness, "B")
        try await laptop.encryption!.restore(recoveryKey: recovery.text, in: laptop)
        try await b.start()
        try await b.fetchChanges()
        let record = try #require(try b.store.record(zone: Self.zone, name: "p1"))
        #expect(record.fields["caption"] == .string(caption))
        let asset = try #require(record.fields["photo"].flatMap(Nimbus.Asset.init(fieldValue:)))
        #expect(asset.isEncrypted)
        let onLaptop = try #require(try await b.assetFile(for: record, field: "photo"))
        #expect(try Data(contentsOf: onLaptop) == photo)

        // The server's storage holds neither the photo nor the caption, in any encoding.
        let dumped = try await EncryptedSyncTests.dump(harness.storage)
        #expect(dumped.count > photo.count, "the dump read the asset bytes")
        for secret in [marker, caption] {
            for form in MarkerForms.of(secret) {
                #expect(!dumped.contains(form), "\(engine): '\(form)' (a form of \(secret)) is in the server's storage")
            }
        }
        #expect(dumped.contains("Beach"), "the title, not encrypted, is in clear: the dump finds what is there")

        // Nor does an export of the container (`nimbus export`'s core, through the engine's seams).
        let out = URL(fileURLWithPath: "\(harness.directory)/export-\(UUID().uuidString)")
        let store = harness.server.store
        let summary = try await ContainerExport.write(
            container: SyncHarness.containerID, from: store, assets: try harness.storage.openAssets(for: store, directory: nil),
            to: out)
        #expect(summary.assets >= 1 && summary.missingAssets == 0)
        #expect(summary.assetBytes > Int64(photo.count), "the export holds the asset's (encrypted) bytes")
        let exported = try EncryptedSyncTests.files(under: out.path)
        for secret in [marker, caption] {
            for form in MarkerForms.of(secret) {
                #expect(!exported.contains(form), "\(engine): '\(form)' (a form of \(secret)) is in the export")
            }
        }
        #expect(exported.contains("Beach"), "the title, not encrypted, is in clear in the export")

        // Another user with keys of their own cannot open it (nor can the server give them a key).
        let mallory = try await harness.server.store.createUser(
            name: "mallory", email: nil, firstName: nil, lastName: nil, container: SyncHarness.containerID
        ).token
        let (_, stranger) = try Self.device(harness, "M", webToken: mallory)
        try await stranger.encryption!.setUp(in: stranger)
        let target = URL(fileURLWithPath: "\(harness.directory)/stolen.jpg")
        do {
            try await stranger.privateCloudDatabase.download(asset, to: target)
            Issue.record("another user opened the photo")
        } catch let error as NimbusError {
            #expect(error.code == .encryptionKeysMissing)
        }
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }
}
