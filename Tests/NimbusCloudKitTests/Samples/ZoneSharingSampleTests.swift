import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// A port of the shape of Apple's zone-sharing sample (written here, not copied): one user
/// shares a whole zone, another accepts it, reads it and writes into it, through
/// NimbusCloudKit only.
@Suite("Zone-sharing sample")
struct ZoneSharingSampleTests {
    @Test(arguments: Engine.available)
    func aWholeZoneIsSharedAcceptedReadAndWrittenByTheOtherUser(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let alice = try await server.container(user: "alice")
            let bob = try await server.container(user: "bob")
            let zone = CKRecordZone(zoneName: "Contacts")
            _ = try await alice.privateCloudDatabase.save(zone)
            let grace = CKRecord(recordType: "Contact", recordID: CKRecord.ID(recordName: "grace", zoneID: zone.zoneID))
            grace["name"] = "Grace"
            _ = try await alice.privateCloudDatabase.save(grace)

            let share = CKShare(recordZoneID: zone.zoneID)
            #expect(share.recordID.recordName == CKRecordNameZoneWideShare)
            share[CKShare.SystemFieldKey.title] = "Alice's contacts"
            share.publicPermission = .none
            let bobParticipant = try await alice.shareParticipant(forUserRecordID: try await bob.userRecordID())
            bobParticipant.permission = .readWrite
            share.addParticipant(bobParticipant)
            #expect(try await alice.privateCloudDatabase.recordZone(for: zone.zoneID).share == nil)
            let saved = try #require(try await alice.privateCloudDatabase.save(share) as? CKShare)
            let url = try #require(saved.url)
            // The zone now names its share, as the sample's `fetchOrCreateShare` reads it.
            let listed = try #require(try await alice.privateCloudDatabase.allRecordZones().first { $0.zoneID == zone.zoneID })
            #expect(listed.share?.recordID == saved.recordID)
            #expect(try await alice.privateCloudDatabase.record(for: try #require(listed.share).recordID) is CKShare)

            let metadata = try await bob.shareMetadata(for: url)
            #expect(metadata.hierarchicalRootRecordID == nil)
            #expect(metadata.share[CKShare.SystemFieldKey.title] as? String == "Alice's contacts")
            _ = try await bob.accept(metadata)

            let shared = bob.sharedCloudDatabase
            let sharedZoneID = try #require(try await shared.databaseChanges(since: nil).modifications.first?.zoneID)
            #expect(try await shared.allRecordZones().first?.share?.recordID.recordName == CKRecordNameZoneWideShare)
            let changes = try await shared.recordZoneChanges(inZoneWith: sharedZoneID, since: nil)
            #expect(changes.modificationResultsByID.keys.contains { $0.recordName == "grace" })

            let ada = CKRecord(recordType: "Contact", recordID: CKRecord.ID(recordName: "ada", zoneID: sharedZoneID))
            ada["name"] = "Ada"
            _ = try await shared.save(ada)
            let seenByAlice = try await alice.privateCloudDatabase.record(for: CKRecord.ID(recordName: "ada", zoneID: zone.zoneID))
            #expect(seenByAlice["name"] as? String == "Ada")
        }
    }
}
