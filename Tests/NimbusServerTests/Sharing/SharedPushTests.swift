import NimbusProtocol
import NimbusTestSupport
import Testing

/// Subscriptions of the `shared` database: a database subscription fires when a shared
/// zone changes, whoever changed it, and stops when the share ends.
@Suite("Sharing: push")
struct SharedPushTests {
    static let subscription: JSON = [
        "subscriptionID": "shared-changes", "subscriptionType": "database",
        "notificationInfo": ["shouldSendContentAvailable": true],
    ]

    @Test(arguments: Engine.available) func aChangeInASharedZoneReachesTheParticipantsDevice(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice", device: "alice-phone")
            let bob = try await server.user("bob", device: "bob-phone")
            let owner = try #require(alice.userRecordName)
            try await SharingTests.album(alice)
            let guid = try await SharingTests.shareAlbum(alice, participants: [(try #require(bob.userRecordName), "READ_WRITE")])
            _ = try await bob.accept(guid)

            let query: JSON = [
                "subscriptionID": "photos", "subscriptionType": "query", "query": ["recordType": "Photo"],
                "zoneID": ["zoneName": "Albums", "ownerRecordName": .string(owner)],
            ]
            #expect(try await bob.subscribe(query, scope: "shared").serverErrorCode == "BAD_REQUEST")
            let saved = try await bob.subscribe(Self.subscription, scope: "shared")
            #expect(saved["subscriptions"]?.array?.first?["subscriptionID"]?.string == "shared-changes", "\(saved.text)")
            let listed = try await bob.post("subscriptions/list", [:], scope: "shared")
            #expect(listed["subscriptions"]?.array?.compactMap { $0["subscriptionID"]?.string } == ["shared-changes"], "\(listed.text)")
            #expect(try await alice.post("subscriptions/list", [:])["subscriptions"]?.array?.isEmpty == true)

            let device = try await PushTestDevice.connect(bob, deviceID: "bob-tablet")
            defer { Task { await device.disconnect() } }
            _ = try await alice.modify(
                "Albums", [sharingOp("forceUpdate", "photo-1", fields: ["caption": "Beach at noon"])])
            let push = try await device.next()
            let ck = push["ck"] ?? push["payload"]?["ck"]
            #expect(ck?["met"]?["sid"]?.string == "shared-changes", "\(push)")
            #expect(ck?["met"]?["dbs"]?.int64 == 3, "dbs 3 is the shared database: \(push)")
            let collection = try await bob.allNotifications()
            #expect(collection.last?["subscriptionID"]?.string == "shared-changes")
            #expect(collection.last?["databaseScope"]?.string == "shared")

            // Bob's own change does not push to the device that made it, but to his others.
            _ = try await bob.onDevice("bob-tablet").sharedModify(
                "Albums", owner: owner, [sharingOp("forceUpdate", "photo-2", fields: ["caption": "x"])])
            _ = try await alice.modify("Albums", [sharingOp("forceUpdate", "photo-1", fields: ["caption": "y"])])
            let next = try await device.next()
            #expect((next["ck"] ?? next["payload"]?["ck"])?["met"]?["sid"]?.string == "shared-changes")

            // Once removed (the removal itself tells his devices to fetch), changes there
            // notify him no more.
            _ = try await alice.modify(
                "Albums",
                [shareOp("album-share", type: "update", tag: try await SharingTests.tag(alice, "album-share"))])
            let count = try await bob.allNotifications().count
            _ = try await alice.modify("Albums", [sharingOp("forceUpdate", "photo-1", fields: ["caption": "z"])])
            #expect(try await bob.allNotifications().count == count, "no notification after the share ended")
        }
    }
}
