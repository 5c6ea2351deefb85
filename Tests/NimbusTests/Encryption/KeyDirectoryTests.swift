import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// The key directory's entries as devices check them, on both engines: an entry someone else
/// created in a user's name (which the server refuses, `KeyDirectoryRulesTests`; here written
/// straight into the storage, as a malicious server or an older one could hold it) is refused
/// by every device, and nothing is wrapped to its keys.
@Suite("Key directory on the device")
struct KeyDirectoryTests {
    @Test(arguments: Engine.available)
    func anEntryInAnotherUsersNameIsRefusedAndNothingIsWrappedToIt(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { live in
            let users = try await EncryptedParticipantTests.users(live, ["alice", "mallory", "carol"])
            let (alice, mallory, carol) = (users[0], users[1], users[2])
            let bob = try await EncryptedValuesTests.device(live, user: "bob")
            let bobName = try await bob.container.userRecordID().recordName
            let malloryName = try await mallory.container.userRecordID().recordName
            let malloryKeys = try #require(try await mallory.container.encryption!.publishedKeys(of: malloryName, in: mallory.container))

            // Mallory's sharing key under Bob's name, created by Mallory, past the server's rules.
            let squat = NimbusProtocol.Record(
                recordName: "keys-" + bobName, recordType: KeyDirectoryRules.recordType,
                fields: ["sharingKey": .bytes(Data(malloryKeys.sharingKey))])
            let outcome = try await live.server.store.modifyRecords(
                [RecordOperation(type: .create, record: squat)], zone: ZoneID.defaultZoneName, atomic: false,
                policy: WritePolicy(creatorOnlyWrites: false, now: Int64(Date().timeIntervalSince1970 * 1000)),
                caller: Caller(userRecordName: malloryName),
                in: DatabaseKey(container: LiveServer.containerID, environment: .development, scope: .public, owner: DatabaseKey.publicOwner))
            guard case .saved? = outcome.results.first else {
                Issue.record("the squatted entry was not written: \(outcome.results)")
                return
            }

            // Devices refuse the entry: Alice's device reads no keys for Bob; sharing a zone with
            // Bob and Carol wraps nothing to Mallory's key, and Carol still gets hers.
            #expect(await EncryptedValuesTests.code { _ = try await alice.container.encryption!.publishedKeys(of: bobName, in: alice.container) } == .decryptionFailed)
            let carolName = try await carol.container.userRecordID().recordName
            try await alice.database.save(RecordZone(zoneID: EncryptedSharingTests.albums))
            var album = Nimbus.Record(recordType: "Album", recordID: Nimbus.Record.ID(recordName: "album", zoneID: EncryptedSharingTests.albums))
            album.encryptedValues["title"] = "MARKER-album"
            var share = Share(rootRecord: album)
            share.addParticipant(.init(userRecordName: bobName, permission: .readOnly))
            share.addParticipant(.init(userRecordName: carolName, permission: .readOnly))
            let (saved, _) = try await alice.database.save(share, rootRecord: album)
            let changes = try await alice.database.recordZoneChanges(inZoneWith: EncryptedSharingTests.albums, since: nil)
            let grants = changes.modifications.filter { $0.recordType == "NimbusZoneKeyGrant" }
            #expect(!grants.isEmpty)
            #expect(grants.allSatisfy { $0.fieldValue(forKey: "participant")?.stringValue == carolName })
            let zone = try await carol.container.accept(shortGUID: try #require(saved.shortGUID)).zoneID
            let title = try await carol.container.sharedCloudDatabase.record(for: Nimbus.Record.ID(recordName: "album", zoneID: zone))
            #expect(title.encryptedValues["title"] as String? == "MARKER-album")
        }
    }
}
