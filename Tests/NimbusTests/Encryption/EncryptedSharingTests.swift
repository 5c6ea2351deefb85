import Crypto
import Foundation
import Nimbus
import NimbusCrypto
import NimbusTestSupport
import Testing

/// Encrypted fields in a shared hierarchy between three users, on both engines: each
/// participant gets the zone key wrapped to their published key; removing one rotates the key.
@Suite("Encrypted sharing")
struct EncryptedSharingTests {
    typealias Device = EncryptedValuesTests.Device
    static let albums = ZoneID(zoneName: "Albums")

    static func photo(_ name: String, caption: String, parent: Record.ID) -> Record {
        var photo = Record(recordType: "Photo", recordID: Record.ID(recordName: name, zoneID: albums))
        photo.parent = Reference(recordID: parent)
        photo.encryptedValues["caption"] = caption
        return photo
    }

    /// The key ID the server's copy of `name`'s caption was sealed with (as the operator sees it).
    static func keyID(_ live: LiveServer, _ owner: Device, _ name: String) async throws -> [UInt8]? {
        let answer = try await EncryptedValuesTests.raw(
            live, owner, "records/lookup", ["zoneID": ["zoneName": "Albums"], "records": [["recordName": .string(name)]]])
        let value = answer["records"]?.array?.first?["fields"]?["caption"]?["value"]?.string
        #expect(answer.serialized().contains("MARKER") == false)
        return value.flatMap { Data(base64Encoded: $0) }.flatMap { FieldSealing.keyID(of: Array($0)) }
    }

    @Test(arguments: Engine.available)
    func participantsReadAndWriteEncryptedFieldsAndARemovedOneReadsNothingNew(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { live in
            var users: [Device] = []
            for name in ["alice", "bob", "carol"] {
                let device = try await EncryptedValuesTests.device(live, user: name)
                try await device.container.encryption!.setUp(in: device.container)
                users.append(device)
            }
            let (alice, bob, carol) = (users[0], users[1], users[2])
            let dave = try await EncryptedValuesTests.device(live, user: "dave")  // no keys published
            let names = try await [bob, carol, dave].asyncMap { try await $0.container.userRecordID().recordName }
            try await alice.database.save(RecordZone(zoneID: Self.albums))
            var album = Record(recordType: "Album", recordID: Record.ID(recordName: "album", zoneID: Self.albums))
            album.encryptedValues["title"] = "MARKER-summer"
            var share = Share(rootRecord: album)
            share.addParticipant(.init(userRecordName: names[0], permission: .readWrite))
            share.addParticipant(.init(userRecordName: names[1], permission: .readOnly))
            share.addParticipant(.init(userRecordName: names[2], permission: .readOnly))
            let (saved, root) = try await alice.database.save(share, rootRecord: album)
            try await alice.database.save(Self.photo("p1", caption: "MARKER-beach", parent: root.id))
            let oldKey = try #require(try await Self.keyID(live, alice, "p1"))

            // Bob and Carol accept and read the captions; Bob writes one, everyone reads it.
            let zone = try await bob.container.accept(shortGUID: try #require(saved.shortGUID)).zoneID
            _ = try await carol.container.accept(shortGUID: try #require(saved.shortGUID))
            let p1 = Record.ID(recordName: "p1", zoneID: zone)
            #expect(try await bob.container.sharedCloudDatabase.record(for: p1).encryptedValues["caption"] as String? == "MARKER-beach")
            #expect(try await carol.container.sharedCloudDatabase.record(for: Record.ID(recordName: "album", zoneID: zone)).encryptedValues["title"] as String? == "MARKER-summer")
            var bobs = Record(recordType: "Photo", recordID: Record.ID(recordName: "p2", zoneID: zone))
            bobs.parent = Reference(recordID: Record.ID(recordName: "album", zoneID: zone))
            bobs.encryptedValues["caption"] = "MARKER-from-bob"
            try await bob.container.sharedCloudDatabase.save(bobs)
            #expect(try await alice.database.record(for: Record.ID(recordName: "p2", zoneID: Self.albums)).encryptedValues["caption"] as String? == "MARKER-from-bob")
            #expect(try await carol.container.sharedCloudDatabase.record(for: Record.ID(recordName: "p2", zoneID: zone)).encryptedValues["caption"] as String? == "MARKER-from-bob")
            #expect(try await Self.keyID(live, alice, "p2") == oldKey)

            // Dave published no keys: he got none (the share itself still works for him).
            let daveZone = try await dave.container.accept(shortGUID: try #require(saved.shortGUID)).zoneID
            #expect(await EncryptedValuesTests.code { _ = try await dave.container.sharedCloudDatabase.record(for: Record.ID(recordName: "p1", zoneID: daveZone)) } == .encryptionKeysMissing)

            // Alice removes Bob: the zone key rotates for later writes.
            var current = try await alice.database.share(for: saved.id)
            let bobParticipant = try #require(current.participants.first { $0.userIdentity.userRecordID?.recordName == names[0] })
            current.removeParticipant(bobParticipant)
            _ = try await alice.database.save(current)
            try await alice.database.save(Self.photo("p3", caption: "MARKER-after-bob", parent: root.id))
            let newKey = try #require(try await Self.keyID(live, alice, "p3"))
            #expect(newKey != oldKey)

            // Carol reads old and new; Bob reads nothing, and no key Bob was given opens p3.
            #expect(try await carol.container.sharedCloudDatabase.record(for: Record.ID(recordName: "p3", zoneID: zone)).encryptedValues["caption"] as String? == "MARKER-after-bob")
            #expect(try await carol.container.sharedCloudDatabase.record(for: p1).encryptedValues["caption"] as String? == "MARKER-beach")
            let bobFailure = await EncryptedValuesTests.code {
                _ = try await bob.container.sharedCloudDatabase.record(for: Record.ID(recordName: "p3", zoneID: zone))
            }
            #expect(bobFailure != nil)
            let grantsToBob = try await alice.database.records(
                for: [Record.ID(recordName: Self.grantName(names[0], keyID: newKey), zoneID: Self.albums)])
            #expect(grantsToBob.values.allSatisfy { (try? $0.get()) == nil })
        }
    }

    /// The record name of a grant (docs/ENCRYPTION.md, "Sharing").
    static func grantName(_ participant: String, keyID: [UInt8]) -> String {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        return "grant-" + hex(Array(SHA256.hash(data: Data(participant.utf8)).prefix(16))) + "-" + hex(keyID)
    }
}

extension Array where Element: Sendable {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
