import Foundation
import NimbusCloudKit
import Testing

/// CloudKit's sharing flow between two users, through NimbusCloudKit only.
@Suite("Sharing")
struct SharingTests {
    @Test(arguments: Engine.available)
    func aHierarchyIsSharedResolvedAcceptedAndReadFromTheSharedDatabase(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let alice = try await server.container(user: "alice")
            let bob = try await server.container(user: "bob")
            let owner = alice.privateCloudDatabase
            let zone = CKRecordZone(zoneName: "Albums")
            _ = try await owner.save(zone)

            let album = CKRecord(recordType: "Album", recordID: CKRecord.ID(recordName: "album-1", zoneID: zone.zoneID))
            album["title"] = "Summer"
            let share = CKShare(rootRecord: album)
            share[CKShare.SystemFieldKey.title] = "Summer"
            #expect(album.share?.recordID == share.recordID)
            let bobParticipant = try await alice.shareParticipant(forUserRecordID: try await bob.userRecordID())
            bobParticipant.permission = .readWrite
            share.addParticipant(bobParticipant)
            let (saved, _) = try await owner.modifyRecords(saving: [album, share], deleting: [])
            let savedShare = try #require(try saved[share.recordID]?.get() as? CKShare)
            let url = try #require(savedShare.url)
            #expect(savedShare.owner.role == .owner)
            #expect(savedShare.participants.contains { $0.role == .privateUser && $0.permission == .readWrite })

            let photo = CKRecord(recordType: "Photo", recordID: CKRecord.ID(recordName: "photo-1", zoneID: zone.zoneID))
            photo.setParent(album)
            _ = try await owner.save(photo)

            let metadata = try await bob.shareMetadata(for: url, shouldFetchRootRecord: true)
            #expect(metadata.participantStatus == .pending)
            #expect(metadata.participantPermission == .readWrite)
            #expect(metadata.hierarchicalRootRecordID?.recordName == "album-1")
            #expect(metadata.rootRecord?["title"] as? String == "Summer")
            let accepted = try await bob.accept(metadata)
            #expect(accepted.currentUserParticipant?.acceptanceStatus == .accepted)

            let shared = bob.sharedCloudDatabase
            let zones = try await shared.databaseChanges(since: nil)
            let sharedZoneID = try #require(zones.modifications.first?.zoneID)
            #expect(sharedZoneID.zoneName == "Albums")
            #expect(sharedZoneID.ownerName != CKCurrentUserDefaultName)
            let changes = try await shared.recordZoneChanges(inZoneWith: sharedZoneID, since: nil)
            let names = Set(changes.modificationResultsByID.keys.map(\.recordName))
            #expect(names.isSuperset(of: ["album-1", "photo-1"]))
            let bobsPhoto = try #require(try changes.modificationResultsByID.first { $0.key.recordName == "photo-1" }?.value.get().record)
            #expect(bobsPhoto.parent?.recordID.recordName == "album-1")
        }
    }
}
