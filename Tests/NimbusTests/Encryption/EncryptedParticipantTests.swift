import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import Nimbus
import NimbusCrypto
import NimbusTestSupport
import Testing

/// Participants' encrypted writes and keys that change while devices run, on both engines: a
/// participant's photo and caption are sealed with the key the owner granted, so the owner and
/// the other participants open them and the server holds ciphertext; a device that cached a
/// zone's key takes a rotation made elsewhere without a new `setUp`, and a revoked one stops.
@Suite("Encrypted participants and stale keys")
struct EncryptedParticipantTests {
    typealias Device = EncryptedValuesTests.Device
    static let albums = EncryptedSharingTests.albums

    /// Devices of new users, each with its keys set up (published) when `keys` says so.
    static func users(_ live: LiveServer, _ names: [String], keys: Bool = true) async throws -> [Device] {
        var devices: [Device] = []
        for name in names {
            let device = try await EncryptedValuesTests.device(live, user: name)
            if keys { try await device.container.encryption!.setUp(in: device.container) }
            devices.append(device)
        }
        return devices
    }

    /// Alice's album, shared read-write with `participants`: the share and its root record.
    static func sharedAlbum(_ alice: Device, with participants: [Device]) async throws -> (Share, Record) {
        try await alice.database.save(RecordZone(zoneID: albums))
        var album = Record(recordType: "Album", recordID: Record.ID(recordName: "album", zoneID: albums))
        album.encryptedValues["title"] = "MARKER-album"
        var share = Share(rootRecord: album)
        for participant in participants {
            let name = try await participant.container.userRecordID().recordName
            share.addParticipant(.init(userRecordName: name, permission: .readWrite))
        }
        return try await alice.database.save(share, rootRecord: album)
    }

    /// A photo record under the album of `zone` (as its writer names the zone).
    static func photo(_ name: String, in zone: ZoneID, file: URL?, caption: String) -> Record {
        var photo = Record(recordType: "Photo", recordID: Record.ID(recordName: name, zoneID: zone))
        photo.parent = Reference(recordID: Record.ID(recordName: "album", zoneID: zone))
        if let file { photo["photo"] = Nimbus.Asset(fileURL: file) }
        photo.encryptedValues["caption"] = caption
        return photo
    }

    /// The bytes the server serves for an asset: what its storage holds.
    static func storedBytes(_ asset: Nimbus.Asset) async throws -> Data {
        let url = try #require(asset.downloadURL)
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(60))
        return Data(try await response.body.collect(upTo: 1 << 24).readableBytesView)
    }

    @Test(arguments: Engine.available)
    func aParticipantsPhotoAndCaptionAreSealedWithTheGrantedKeyAndOpenForEveryone(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { live in
            let users = try await Self.users(live, ["alice", "bob", "carol"])
            let (alice, bob, carol) = (users[0], users[1], users[2])
            let dave = try await Self.users(live, ["dave"], keys: false)[0]
            let (saved, root) = try await Self.sharedAlbum(alice, with: [bob, carol, dave])
            let guid = try #require(saved.shortGUID)
            let zone = try await bob.container.accept(shortGUID: guid).zoneID
            _ = try await carol.container.accept(shortGUID: guid)
            _ = try await dave.container.accept(shortGUID: guid)

            // Bob adds a photo with a caption to Alice's album, through his shared database.
            let marker = "MARKER-bobs-pixels-\(UUID().uuidString.prefix(8))"
            let (file, plaintext) = try EncryptedAssetTests.photo(marker)
            let sent = try await bob.container.sharedCloudDatabase.save(
                Self.photo("bobs", in: zone, file: file, caption: "MARKER-bobs-caption"))
            let asset = try #require(sent["photo"] as Nimbus.Asset?)
            #expect(asset.isEncrypted)
            #expect(asset.size == AssetChunks.Layout(plaintextSize: Int64(plaintext.count)).sealedSize)

            // The server holds ciphertext: the bytes it serves, and the record as it stores it.
            let served = try #require(try await bob.container.sharedCloudDatabase.record(for: sent.id)["photo"] as Nimbus.Asset?)
            let stored = try await Self.storedBytes(served)
            #expect(stored.count == Int(asset.size ?? 0))
            #expect(stored.range(of: Data("MARKER-bobs".utf8)) == nil)
            let raw = try await EncryptedValuesTests.raw(
                live, alice, "records/lookup", ["zoneID": ["zoneName": "Albums"], "records": [["recordName": "bobs"]]])
            #expect(!raw.serialized().contains("MARKER"), "\(raw)")
            #expect(raw["records"]?.array?.first?["fields"]?["photo"]?["value"]?["wrappingKey"]?.string != nil)
            #expect(raw["records"]?.array?.first?["fields"]?["caption"]?["type"] == "ENCRYPTED_BYTES")

            // Alice (through her private database) and Carol (another participant) open both.
            let readers: [(Database, Record.ID)] = [
                (alice.database, Record.ID(recordName: "bobs", zoneID: Self.albums)),
                (carol.container.sharedCloudDatabase, Record.ID(recordName: "bobs", zoneID: zone)),
            ]
            for (database, id) in readers {
                let record = try await database.record(for: id)
                #expect(record.encryptedValues["caption"] as String? == "MARKER-bobs-caption")
                let target = EncryptedAssetTests.temporaryFile()
                try await database.download(try #require(record["photo"] as Nimbus.Asset?), to: target)
                #expect(try Data(contentsOf: target) == plaintext)
            }

            // A key wrapped for another user: Bob's current grant given Carol's wrapped key (by
            // a malicious server, which can write as the owner). Bob's device refuses it with a
            // clear error and sends nothing; restored, his writes go through again.
            let bobName = try await bob.container.userRecordID().recordName
            let carolName = try await carol.container.userRecordID().recordName
            var bobsGrant = try await alice.database.record(for: Self.currentGrant(bobName))
            let carolsGrant = try await alice.database.record(for: Self.currentGrant(carolName))
            let bobsWrapped = try #require(bobsGrant.fieldValue(forKey: "wrapped"))
            bobsGrant.setFieldValue(try #require(carolsGrant.fieldValue(forKey: "wrapped")), forKey: "wrapped")
            bobsGrant = try await alice.database.save(bobsGrant)
            let second = Self.photo("bobs2", in: zone, file: nil, caption: "MARKER-bobs-second")
            #expect(await EncryptedValuesTests.code { _ = try await bob.container.sharedCloudDatabase.save(second) } == .decryptionFailed)
            #expect(await EncryptedValuesTests.code { _ = try await alice.database.record(for: Record.ID(recordName: "bobs2", zoneID: Self.albums)) } == .unknownItem)
            bobsGrant.setFieldValue(bobsWrapped, forKey: "wrapped")
            _ = try await alice.database.save(bobsGrant)
            try await bob.container.sharedCloudDatabase.save(second)
            #expect(try await carol.container.sharedCloudDatabase.record(for: Record.ID(recordName: "bobs2", zoneID: zone)).encryptedValues["caption"] as String? == "MARKER-bobs-second")

            // Dave set up his keys after Alice shared: with no key granted, his photo is
            // refused on his device (never sent plain), until Alice shares the keys again.
            try await dave.container.encryption!.setUp(in: dave.container)
            let davesFile = try EncryptedAssetTests.photo("MARKER-daves-pixels").0
            let daves = Self.photo("daves", in: zone, file: davesFile, caption: "MARKER-daves-caption")
            var photoOnly = Record(recordType: "Photo", recordID: daves.id)
            photoOnly.parent = daves.parent
            photoOnly["photo"] = Nimbus.Asset(fileURL: davesFile)
            #expect(await EncryptedValuesTests.code { _ = try await dave.container.sharedCloudDatabase.save(photoOnly) } == .encryptionKeysMissing)
            #expect(await EncryptedValuesTests.code { _ = try await dave.container.sharedCloudDatabase.save(daves) } == .encryptionKeysMissing)
            #expect(await EncryptedValuesTests.code { _ = try await alice.database.record(for: Record.ID(recordName: "daves", zoneID: Self.albums)) } == .unknownItem)
            _ = try await alice.container.encryption!.shareKeys(
                for: try await alice.database.share(for: saved.id), rootRecordID: root.id, in: alice.database)
            let davesSaved = try await dave.container.sharedCloudDatabase.save(daves)
            #expect((davesSaved["photo"] as Nimbus.Asset?)?.isEncrypted == true)
            let fromDave = try await alice.database.record(for: Record.ID(recordName: "daves", zoneID: Self.albums))
            #expect(fromDave.encryptedValues["caption"] as String? == "MARKER-daves-caption")
        }
    }

    @Test(arguments: Engine.available)
    func anOwnersOtherDeviceSealsWithTheRotatedKeyWithoutANewSetUp(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { live in
            let phone = try await EncryptedValuesTests.device(live, user: "alice")
            let recovery = try #require(try await phone.container.encryption!.setUp(in: phone.container))
            let laptop = try await EncryptedValuesTests.device(live, user: "alice")
            try await laptop.container.encryption!.restore(recoveryKey: recovery.text, in: laptop.container)
            let users = try await Self.users(live, ["bob", "carol"])
            let (bob, carol) = (users[0], users[1])
            let (saved, _) = try await Self.sharedAlbum(phone, with: [bob, carol])
            let zone = try await bob.container.accept(shortGUID: try #require(saved.shortGUID)).zoneID
            _ = try await carol.container.accept(shortGUID: try #require(saved.shortGUID))

            // The laptop seals a caption: it holds the zone's current key from then on.
            try await laptop.database.save(Self.photo("p1", in: Self.albums, file: nil, caption: "MARKER-before"))
            let before = try #require(try await EncryptedSharingTests.keyID(live, phone, "p1"))

            // The phone removes Bob: the zone's key rotates.
            var current = try await phone.database.share(for: saved.id)
            let bobName = try await bob.container.userRecordID().recordName
            current.removeParticipant(try #require(current.participants.first { $0.userIdentity.userRecordID?.recordName == bobName }))
            _ = try await phone.database.save(current)

            // The laptop's next caption, with no new setUp, is sealed with the new key: Bob,
            // removed, cannot open it; Carol can.
            try await laptop.database.save(Self.photo("p2", in: Self.albums, file: nil, caption: "MARKER-after"))
            let after = try #require(try await EncryptedSharingTests.keyID(live, phone, "p2"))
            #expect(after != before)
            #expect(await EncryptedValuesTests.code { _ = try await bob.container.sharedCloudDatabase.record(for: Record.ID(recordName: "p2", zoneID: zone)) } != nil)
            #expect(try await carol.container.sharedCloudDatabase.record(for: Record.ID(recordName: "p2", zoneID: zone)).encryptedValues["caption"] as String? == "MARKER-after")
        }
    }

    @Test(arguments: Engine.available)
    func afterARevocationTheOtherDevicesTakeTheNewKeysAndTheRevokedOneStops(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { live in
            let journal = EncryptedValuesTests.zone
            let phone = try await EncryptedValuesTests.device(live, user: "alice")
            let recovery = try #require(try await phone.container.encryption!.setUp(in: phone.container))
            var devices: [Device] = []
            for _ in 0..<3 {
                let device = try await EncryptedValuesTests.device(live, user: "alice")
                try await device.container.encryption!.restore(recoveryKey: recovery.text, in: device.container)
                devices.append(device)
            }
            let (laptop, desktop, tablet) = (devices[0], devices[1], devices[2])
            try await phone.database.save(RecordZone(zoneID: journal))
            let e1 = try await phone.database.save(EncryptedValuesTests.entry("e1", body: "MARKER-e1"))
            // Every device reads e1 and seals a value: each caches the zone's key.
            for (index, device) in devices.enumerated() {
                #expect(try await device.database.record(for: e1.id).encryptedValues["body"] as String? == "MARKER-e1")
                try await device.database.save(EncryptedValuesTests.entry("d\(index)", body: "MARKER-d\(index)"))
            }
            let oldKey = try #require(try await Self.journalKeyID(live, phone, "e1"))

            // The phone revokes the tablet: a new account key, and a new current key for the zone.
            _ = try await phone.container.encryption!.revokeDevice(
                publicKey: try await tablet.container.encryption!.devicePublicKey(in: tablet.container), in: phone.container)
            let e2 = try await phone.database.save(EncryptedValuesTests.entry("e2", body: "MARKER-e2"))
            let newKey = try #require(try await Self.journalKeyID(live, phone, "e2"))
            #expect(newKey != oldKey)

            // A key wrapped for another device: the laptop's record handed the account key
            // wrapped to the desktop. The laptop refuses it clearly and keeps nothing; restored,
            // it reads on.
            let keysDatabase = phone.database
            var laptopRecord = try await keysDatabase.record(
                for: Self.deviceRecord(try await laptop.container.encryption!.devicePublicKey(in: laptop.container)))
            let desktopRecord = try await keysDatabase.record(
                for: Self.deviceRecord(try await desktop.container.encryption!.devicePublicKey(in: desktop.container)))
            let laptopsWrapped = try #require(laptopRecord.fieldValue(forKey: "account"))
            laptopRecord.setFieldValue(try #require(desktopRecord.fieldValue(forKey: "account")), forKey: "account")
            laptopRecord = try await keysDatabase.save(laptopRecord, savePolicy: .allKeys)
            #expect(await EncryptedValuesTests.code { _ = try await laptop.database.record(for: e2.id) } == .decryptionFailed)
            laptopRecord.setFieldValue(laptopsWrapped, forKey: "account")
            _ = try await keysDatabase.save(laptopRecord, savePolicy: .allKeys)

            // The laptop reads e2 (a key it did not know, under an account key it did not
            // have): it takes both without a new setUp, and seals its next value with the new key.
            #expect(try await laptop.database.record(for: e2.id).encryptedValues["body"] as String? == "MARKER-e2")
            try await laptop.database.save(EncryptedValuesTests.entry("e3", body: "MARKER-e3"))
            #expect(try await Self.journalKeyID(live, phone, "e3") == newKey)

            // The desktop only fetches its key directory's changes, as a sync engine does: that
            // is enough for its next value to take the new key.
            _ = try await desktop.database.recordZoneChanges(inZoneWith: ZoneID(zoneName: EncryptionKeys.keysZoneName), since: nil)
            try await desktop.database.save(EncryptedValuesTests.entry("e4", body: "MARKER-e4"))
            #expect(try await Self.journalKeyID(live, phone, "e4") == newKey)

            // The tablet learns it was revoked from the first value it cannot open, and from
            // then on seals nothing, even with the key it had cached.
            #expect(await EncryptedValuesTests.code { _ = try await tablet.database.record(for: e2.id) } == .permissionFailure)
            #expect(await EncryptedValuesTests.code { _ = try await tablet.database.save(EncryptedValuesTests.entry("e5", body: "MARKER-e5")) } == .permissionFailure)
            #expect(await EncryptedValuesTests.code { _ = try await phone.database.record(for: Record.ID(recordName: "e5", zoneID: journal)) } == .unknownItem)
        }
    }

    /// A participant's grant of the album zone's current key (docs/ENCRYPTION.md, "Sharing").
    static func currentGrant(_ participant: String) -> Record.ID {
        let hash = SHA256.hash(data: Data(participant.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        return Record.ID(recordName: "grant-" + hash, zoneID: albums)
    }

    /// A device's record in its account's private key directory.
    static func deviceRecord(_ publicKey: [UInt8]) -> Record.ID {
        let hash = SHA256.hash(data: Data(publicKey)).prefix(16).map { String(format: "%02x", $0) }.joined()
        return Record.ID(recordName: "device-" + hash, zoneID: ZoneID(zoneName: EncryptionKeys.keysZoneName))
    }

    /// The key ID the server's copy of a journal entry's body was sealed with.
    static func journalKeyID(_ live: LiveServer, _ device: Device, _ name: String) async throws -> [UInt8]? {
        let value = try await EncryptedValuesTests.rawFields(live, device, name)?["body"]?["value"]?.string
        return value.flatMap { Data(base64Encoded: $0) }.flatMap { FieldSealing.keyID(of: Array($0)) }
    }
}
