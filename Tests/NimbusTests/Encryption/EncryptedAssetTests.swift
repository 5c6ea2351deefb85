import Crypto
import Foundation
import Nimbus
import NimbusCrypto
import NimbusProtocol
import NimbusTestSupport
import Testing

/// Encrypted assets end to end against a real server: every asset of the private database is
/// encrypted on a device with keys, through the same `Asset` API; the server stores and
/// deduplicates ciphertext; the owner's devices read it, whole or by range; anyone else, and
/// any altered or moved file, gets a typed error and no file.
@Suite("Encrypted assets")
struct EncryptedAssetTests {
    typealias Device = EncryptedValuesTests.Device
    static let zone = ZoneID(zoneName: "Album")

    /// A photo of `count` bytes with `marker` all through it.
    static func photo(_ marker: String, count: Int = 300_000) throws -> (URL, Data) {
        var bytes = Data()
        var index = 0
        while bytes.count < count {
            bytes.append(contentsOf: Array("\(marker)-\(index);".utf8))
            index += 1
        }
        let data = bytes.prefix(count)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("photo-\(UUID().uuidString).jpg")
        try data.write(to: url)
        return (url, Data(data))
    }

    static func temporaryFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("download-\(UUID().uuidString)")
    }

    /// Every file of the server's data directory, as text.
    static func serverFiles(_ live: LiveServer) throws -> String {
        var text = ""
        let files = FileManager.default.enumerator(atPath: live.directory)
        while let file = files?.nextObject() as? String {
            let path = (live.directory as NSString).appendingPathComponent(file)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            text += String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        }
        return text
    }

    /// The server's file of an asset's bytes (its content address is the SHA-256 of the bytes).
    static func blobFile(_ live: LiveServer, _ asset: Nimbus.Asset) throws -> String {
        let hex = Data(base64Encoded: asset.fileChecksum!)!.map { String(format: "%02x", $0) }.joined()
        let files = FileManager.default.enumerator(atPath: live.directory)
        while let file = files?.nextObject() as? String {
            if file.hasSuffix(hex) { return (live.directory as NSString).appendingPathComponent(file) }
        }
        throw NimbusError(.unknownItem, "no blob \(hex)")
    }

    static func rawFields(_ live: LiveServer, _ device: Device, _ name: String) async throws -> JSON? {
        let answer = try await EncryptedValuesTests.raw(
            live, device, "records/lookup", ["zoneID": ["zoneName": "Album"], "records": [["recordName": .string(name)]]])
        return answer["records"]?.array?.first?["fields"]
    }

    static func photoRecord(_ name: String, _ file: URL) -> Nimbus.Record {
        var record = Nimbus.Record(recordType: "Photo", recordID: Nimbus.Record.ID(recordName: name, zoneID: zone))
        record["photo"] = Nimbus.Asset(fileURL: file)
        record["title"] = "Photo \(name)"
        return record
    }

    @Test func aPhotoIsEncryptedOnTheDeviceDeduplicatedAsCiphertextAndReadOnlyByItsOwner() async throws {
        try await LiveServer.with { live in
            let marker = "MARKER-photo-\(UUID().uuidString.prefix(8))"
            let (file, plaintext) = try Self.photo(marker)
            let phone = try await EncryptedValuesTests.device(live, user: "alice")
            let recovery = try #require(try await phone.container.encryption!.setUp(in: phone.container))
            try await phone.database.save(RecordZone(zoneID: Self.zone))
            let saved = try await phone.database.save(Self.photoRecord("p1", file))
            let asset = try #require(saved["photo"] as Nimbus.Asset?)
            #expect(asset.isEncrypted)
            #expect(asset.size == AssetChunks.Layout(plaintextSize: Int64(plaintext.count)).sealedSize)

            // The record's asset dictionary carries the wrapped key and its checksum; the
            // server's files hold no byte of the photo.
            let fields = try #require(try await Self.rawFields(live, phone, "p1"))
            let wrappingKey = try #require(fields["photo"]?["value"]?["wrappingKey"]?.string)
            #expect(fields["photo"]?["value"]?["referenceChecksum"]?.string
                == Data(SHA256.hash(data: Data(base64Encoded: wrappingKey)!)).base64EncodedString())
            let stored = try Self.serverFiles(live)
            #expect(stored.count > plaintext.count, "the dump read the asset files")
            #expect(!stored.contains(marker))
            #expect(!stored.contains(String(marker.dropFirst(7))))

            // The same photo saved again in the zone is the same ciphertext (stored once), with
            // a key wrapped for its own record.
            let again = try await phone.database.save(Self.photoRecord("p2", file))
            let second = try #require(again["photo"] as Nimbus.Asset?)
            #expect(second.fileChecksum == asset.fileChecksum)
            #expect(second.serverValueForTest.wrappingKey != asset.serverValueForTest.wrappingKey)

            // Read back whole (through a fetch) and by range (the chunks that cover it).
            let fetched = try #require(try await phone.database.record(for: saved.id)["photo"] as Nimbus.Asset?)
            let target = Self.temporaryFile()
            try await phone.database.download(fetched, to: target)
            #expect(try Data(contentsOf: target) == plaintext)
            #expect(try await phone.database.bytes(of: fetched, in: 65_000..<270_000) == plaintext[65_000..<270_000])
            #expect(try await phone.database.bytes(of: fetched, in: 299_990..<400_000) == plaintext[299_990...])
            #expect(try await phone.database.bytes(of: fetched, in: 0..<0) == Data())

            // A second device of the same user, restored by the recovery key, reads it.
            let laptop = try await EncryptedValuesTests.device(live, user: "alice")
            try await laptop.container.encryption!.restore(recoveryKey: recovery.text, in: laptop.container)
            let onLaptop = try #require(try await laptop.database.record(for: again.id)["photo"] as Nimbus.Asset?)
            let laptopFile = Self.temporaryFile()
            try await laptop.database.download(onLaptop, to: laptopFile)
            #expect(try Data(contentsOf: laptopFile) == plaintext)

            // Another user who gets hold of the asset (its download URL and dictionary) reads
            // nothing: no key, a typed error, no file.
            let bob = try await EncryptedValuesTests.device(live, user: "bob")
            try await bob.container.encryption!.setUp(in: bob.container)
            let bobFile = Self.temporaryFile()
            #expect(await EncryptedValuesTests.code { try await bob.database.download(fetched, to: bobFile) } == .encryptionKeysMissing)
            #expect(!FileManager.default.fileExists(atPath: bobFile.path))
            #expect(await EncryptedValuesTests.code { _ = try await fetched.download(to: bobFile) } == .encryptionKeysMissing)
            var keyless = bob.container
            keyless.encryption = nil
            #expect(await EncryptedValuesTests.code { try await keyless.privateCloudDatabase.download(fetched, to: bobFile) } == .encryptionKeysMissing)
            #expect(!FileManager.default.fileExists(atPath: bobFile.path))
        }
    }

    @Test func aTamperedOrMovedAssetFailsWithATypedErrorAndWritesNothing() async throws {
        try await LiveServer.with { live in
            let (file, plaintext) = try Self.photo("MARKER-tamper")
            let phone = try await EncryptedValuesTests.device(live, user: "alice")
            try await phone.container.encryption!.setUp(in: phone.container)
            try await phone.database.save(RecordZone(zoneID: Self.zone))
            let saved = try await phone.database.save(Self.photoRecord("p1", file))
            _ = try await phone.database.save(Self.photoRecord("p2", try Self.photo("other", count: 1000).0))

            // A server that moves p1's asset dictionary into p2: p2 no longer opens.
            let p1 = try #require(try await Self.rawFields(live, phone, "p1"))
            let moved = try await EncryptedValuesTests.raw(
                live, phone, "records/modify",
                [
                    "zoneID": ["zoneName": "Album"],
                    "operations": [
                        [
                            "operationType": "forceUpdate",
                            "record": ["recordName": "p2", "recordType": "Photo", "fields": .object(["photo": p1["photo"]!])],
                        ]
                    ],
                ])
            #expect(moved["records"]?.array?.first?["serverErrorCode"] == nil, "\(moved)")
            let p2 = Nimbus.Record.ID(recordName: "p2", zoneID: Self.zone)
            #expect(await EncryptedValuesTests.code { _ = try await phone.database.record(for: p2) } == .decryptionFailed)

            // A server that alters a chunk of the stored ciphertext (and the checksum it
            // reports with it): the download and the ranged read fail, nothing is written.
            let asset = try #require(try await phone.database.record(for: saved.id)["photo"] as Nimbus.Asset?)
            let blob = try Self.blobFile(live, asset)
            var bytes = try Data(contentsOf: URL(fileURLWithPath: blob))
            let layout = AssetChunks.Layout(plaintextSize: Int64(plaintext.count))
            bytes[Int(layout.chunkOffset(1)) + 100] ^= 0x40
            try bytes.write(to: URL(fileURLWithPath: blob))
            var forged = asset.serverValueForTest
            forged.fileChecksum = Data(SHA256.hash(data: bytes)).base64EncodedString()
            let tampered = Nimbus.Asset(serverValueForTest: forged)
            let target = Self.temporaryFile()
            #expect(await EncryptedValuesTests.code { try await phone.database.download(tampered, to: target) } == .decryptionFailed)
            #expect(!FileManager.default.fileExists(atPath: target.path))
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: target.deletingLastPathComponent().path)
                .filter { $0.hasPrefix(target.lastPathComponent) }
            #expect(leftovers.isEmpty, "\(leftovers)")
            #expect(await EncryptedValuesTests.code { _ = try await phone.database.bytes(of: tampered, in: 270_000..<270_010) } == .decryptionFailed)
            // The chunks before it still read (each chunk opens on its own).
            #expect(try await phone.database.bytes(of: tampered, in: 0..<1000) == plaintext.prefix(1000))
        }
    }
}

extension Nimbus.Asset {
    var serverValueForTest: NimbusProtocol.Asset { serverValue! }
    init(serverValueForTest value: NimbusProtocol.Asset) { self.init(serverValue: value) }
}
