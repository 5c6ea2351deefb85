import Foundation
import Nimbus
import NimbusProtocol
import Testing

/// The SDK's sharing against a real server: a hierarchy and a zone shared, resolved,
/// accepted, read and written by permission, left.
@Suite("Sharing through the SDK")
struct SharingSDKTests {
    let albums = ZoneID(zoneName: "Albums")

    @Test func aHierarchyIsSharedAcceptedReadWrittenAndLeft() async throws {
        try await LiveServer.with { server in
            let alice = try await server.container(user: "alice")
            let bob = try await server.container(user: "bob")
            let carol = try await server.container(user: "carol")
            let (bobName, carolName) = (try await bob.userRecordID().recordName, try await carol.userRecordID().recordName)
            let owner = alice.privateCloudDatabase
            _ = try await owner.modifyRecordZones(saving: [RecordZone(zoneName: "Albums")], deleting: [])

            var album = Record(recordType: "Album", recordID: Record.ID(recordName: "album-1", zoneID: albums))
            album["title"] = "Summer"
            var share = Share(rootRecord: album)
            share.title = "Summer"
            share.addParticipant(.init(userRecordName: bobName, permission: .readWrite))
            share.addParticipant(.init(userRecordName: carolName, permission: .readOnly))
            let (saved, root) = try await owner.save(share, rootRecord: album)
            #expect(root.share?.recordName == saved.id.recordName)
            let url = try #require(saved.url)
            #expect(saved.shortGUID.map { url.absoluteString.hasSuffix($0) } == true)
            #expect(saved.owner?.role == .owner)
            #expect(saved.participants.filter { $0.role == .privateUser }.map(\.acceptanceStatus) == [.pending, .pending])

            var photo = Record(recordType: "Photo", recordID: Record.ID(recordName: "photo-1", zoneID: albums))
            photo.parent = Reference(recordID: root.id)
            photo["caption"] = "Beach"
            try await owner.save(photo)

            // Bob resolves, sees the title and his invitation, accepts, reads.
            let metadata = try await bob.shareMetadata(for: url, shouldFetchRootRecord: true)
            #expect(metadata.share.title == "Summer")
            #expect(metadata.participantStatus == .pending)
            #expect(metadata.participantPermission == .readWrite)
            #expect(metadata.rootRecordID?.recordName == "album-1")
            let accepted = try await bob.accept(metadata)
            #expect(accepted.participantStatus == .accepted)
            let sharedZone = accepted.zoneID
            #expect(sharedZone.ownerRecordName == saved.owner?.userIdentity.userRecordID?.recordName)
            let changes = try await bob.sharedCloudDatabase.recordZoneChanges(inZoneWith: sharedZone, since: nil)
            let names = Set(changes.modifications.map(\.id.recordName))
            #expect(names.isSuperset(of: ["album-1", "photo-1"]))
            let bobsPhoto = try #require(changes.modifications.first { $0.id.recordName == "photo-1" })
            #expect(bobsPhoto.parent?.recordName == "album-1")

            // Bob writes (read-write); the owner sees it.
            var edited = bobsPhoto
            edited["caption"] = "Beach at dawn"
            try await bob.sharedCloudDatabase.save(edited)
            #expect(try await owner.record(for: photo.id)["caption"] == "Beach at dawn")

            // Carol (read-only) accepts, reads, and may not write.
            let carolAccepted = try await carol.accept(shortGUID: try #require(saved.shortGUID))
            #expect(carolAccepted.participantPermission == .readOnly)
            var carolsPhoto = try await carol.sharedCloudDatabase.record(for: Record.ID(recordName: "photo-1", zoneID: sharedZone))
            carolsPhoto["caption"] = "Mine"
            await #expect {
                try await carol.sharedCloudDatabase.save(carolsPhoto)
            } throws: { ($0 as? NimbusError)?.code == .permissionFailure }

            // The owner sees both accepted.
            let current = try await owner.share(for: saved.id)
            #expect(current.participants.filter { $0.role == .privateUser }.map(\.acceptanceStatus) == [.accepted, .accepted])

            // Bob leaves: the zone reads as gone for him.
            try await bob.leave(accepted.share)
            await #expect {
                try await bob.sharedCloudDatabase.record(for: Record.ID(recordName: "photo-1", zoneID: sharedZone))
            } throws: { [.zoneNotFound, .unknownItem].contains(($0 as? NimbusError)?.code) }
        }
    }

    @Test func aZoneWideShareWithAPublicPermissionLetsAnyoneWithTheURLJoin() async throws {
        try await LiveServer.with { server in
            let alice = try await server.container(user: "alice")
            let dave = try await server.container(user: "dave")
            let owner = alice.privateCloudDatabase
            _ = try await owner.modifyRecordZones(saving: [RecordZone(zoneName: "Albums")], deleting: [])
            var note = Record(recordType: "Note", recordID: Record.ID(recordName: "n1", zoneID: albums))
            note["text"] = "hello"
            try await owner.save(note)

            var share = Share(zoneID: albums)
            share.publicPermission = .readOnly
            let saved = try await owner.save(share)
            #expect(saved.id.recordName == Share.zoneWideShareRecordName)
            #expect(saved.publicPermission == .readOnly)

            let metadata = try await dave.shareMetadata(for: try #require(saved.url))
            #expect(metadata.rootRecordID == nil)
            let accepted = try await dave.accept(metadata)
            #expect(accepted.participantRole == .publicUser)
            #expect(accepted.participantPermission == .readOnly)
            let read = try await dave.sharedCloudDatabase.record(for: Record.ID(recordName: "n1", zoneID: accepted.zoneID))
            #expect(read["text"] == "hello")

            // The owner deletes the share: the stranger reads nothing any more.
            try await owner.deleteRecord(withID: saved.id)
            await #expect {
                try await dave.sharedCloudDatabase.record(for: Record.ID(recordName: "n1", zoneID: accepted.zoneID))
            } throws: { [.zoneNotFound, .unknownItem].contains(($0 as? NimbusError)?.code) }
        }
    }

    @Test func aStrangerCannotResolveAPrivateShare() async throws {
        try await LiveServer.with { server in
            let alice = try await server.container(user: "alice")
            let eve = try await server.container(user: "eve")
            _ = try await alice.privateCloudDatabase.modifyRecordZones(saving: [RecordZone(zoneName: "Albums")], deleting: [])
            let saved = try await alice.privateCloudDatabase.save(Share(zoneID: albums))
            await #expect {
                try await eve.shareMetadata(for: try #require(saved.url))
            } throws: { ($0 as? NimbusError)?.code == .unknownItem }
        }
    }
}
