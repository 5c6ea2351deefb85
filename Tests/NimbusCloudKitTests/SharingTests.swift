import Foundation
import NimbusCloudKit
import NimbusTestSupport
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

    /// Two owners share a zone each with the same two users. One accepts both with one
    /// `CKAcceptSharesOperation` (a callback per share, in the metadatas' order, then the
    /// result); the other with `accept(_:)` of an array. Each then reads both zones.
    @Test(arguments: Engine.available)
    func sharesOfTwoOwnersAreAcceptedTogether(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let bob = try await server.container(user: "bob")
            let erin = try await server.container(user: "erin")
            var urls: [URL] = []
            for owner in ["alice", "carol"] {
                let container = try await server.container(user: owner)
                let zone = CKRecordZone(zoneName: "\(owner)-notes")
                _ = try await container.privateCloudDatabase.save(zone)
                let note = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "\(owner)-note", zoneID: zone.zoneID))
                _ = try await container.privateCloudDatabase.save(note)
                let share = CKShare(recordZoneID: zone.zoneID)
                for user in [bob, erin] {
                    share.addParticipant(try await container.shareParticipant(forUserRecordID: try await user.userRecordID()))
                }
                let saved = try #require(try await container.privateCloudDatabase.save(share) as? CKShare)
                urls.append(try #require(saved.url))
            }

            // Bob: one operation for both, callbacks in order.
            let log = CallbackLog()
            let fetch = CKFetchShareMetadataOperation(shareURLs: urls)
            let fetched = Locked<[URL: CKShare.Metadata]>([:])
            fetch.perShareMetadataResultBlock = { url, result in
                if let metadata = try? result.get() { fetched.set(fetched.get().merging([url: metadata]) { $1 }) }
            }
            bob.add(fetch)
            try await finished(fetch)
            let bobsMetadatas = try urls.map { try #require(fetched.get()[$0]) }
            let accept = CKAcceptSharesOperation(shareMetadatas: bobsMetadatas)
            accept.perShareResultBlock = { metadata, result in
                let owner = metadata.ownerIdentity.userRecordID?.recordName ?? "?"
                let status = (try? result.get())?.currentUserParticipant?.acceptanceStatus == .accepted ? "accepted" : "failed"
                log.append("\(owner) \(status)")
            }
            accept.acceptSharesResultBlock = { result in log.append((try? result.get()) != nil ? "done" : "failed") }
            bob.add(accept)
            try await finished(accept)
            let owners = bobsMetadatas.map { $0.ownerIdentity.userRecordID?.recordName ?? "?" }
            #expect(Set(owners).count == 2)
            #expect(log.events == owners.map { "\($0) accepted" } + ["done"])

            // Erin: the async forms, one call each.
            let erinsMetadatas = try await erin.shareMetadatas(for: urls)
            #expect(Set(erinsMetadatas.keys) == Set(urls))
            let metadatas = try urls.map { try #require(try erinsMetadatas[$0]?.get()) }
            let accepted = try await erin.accept(metadatas)
            #expect(accepted.count == 2)
            for metadata in metadatas {
                #expect(try accepted[metadata]?.get().currentUserParticipant?.acceptanceStatus == .accepted)
            }

            for user in [bob, erin] {
                let zones = try await user.sharedCloudDatabase.databaseChanges(since: nil).modifications.map(\.zoneID.zoneName)
                #expect(Set(zones) == ["alice-notes", "carol-notes"])
            }
        }
    }

    /// A share with a public permission and no participants: anyone signed in with its URL
    /// joins as a public user, reads, and may not write with `.readOnly`.
    @Test func aPublicReadOnlyShareIsJoinedByURLAndRefusesWrites() async throws {
        try await CloudKitServer.with { server in
            let alice = try await server.container(user: "alice")
            let carol = try await server.container(user: "carol")
            let zone = CKRecordZone(zoneName: "Board")
            _ = try await alice.privateCloudDatabase.save(zone)
            _ = try await alice.privateCloudDatabase.save(
                CKRecord(recordType: "Post", recordID: CKRecord.ID(recordName: "welcome", zoneID: zone.zoneID)))
            let share = CKShare(recordZoneID: zone.zoneID)
            share.publicPermission = .readOnly
            let saved = try #require(try await alice.privateCloudDatabase.save(share) as? CKShare)
            #expect(saved.publicPermission == .readOnly)

            let metadata = try await carol.shareMetadata(for: try #require(saved.url))
            #expect(metadata.participantRole == .publicUser)
            #expect(metadata.participantPermission == .readOnly)
            _ = try await carol.accept(metadata)
            let sharedZoneID = try #require(try await carol.sharedCloudDatabase.databaseChanges(since: nil).modifications.first?.zoneID)
            let post = try await carol.sharedCloudDatabase.record(for: CKRecord.ID(recordName: "welcome", zoneID: sharedZoneID))
            #expect(post.recordType == "Post")
            do {
                _ = try await carol.sharedCloudDatabase.save(
                    CKRecord(recordType: "Post", recordID: CKRecord.ID(recordName: "spam", zoneID: sharedZoneID)))
                Issue.record("a read-only public participant wrote into the share")
            } catch let error as CKError {
                #expect(error.code == .permissionFailure, "\(error)")
            }
        }
    }
}
