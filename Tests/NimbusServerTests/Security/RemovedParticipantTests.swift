import NimbusProtocol
import NimbusTestSupport
import Testing

/// The owner sees every participant, removed ones as REMOVED (as CloudKit shows them); a
/// removed participant reads nothing and may be invited again.
@Suite("Security: removed participants")
struct RemovedParticipantTests {
    static func statuses(_ share: TestClient.Reply) -> [String: String] {
        let listed = share.records.first?["participants"]?.array ?? []
        return Dictionary(
            listed.compactMap { item in
                item["userIdentity"]?["userRecordName"]?.string.map { ($0, item["acceptanceStatus"]?.string ?? "") }
            }, uniquingKeysWith: { first, _ in first })
    }

    static func share(_ alice: TestClient) async throws -> TestClient.Reply {
        try await alice.post("records/lookup", ["zoneID": ["zoneName": "Albums"], "records": [["recordName": "album-share"]]])
    }

    @Test(arguments: Engine.available)
    func theOwnerSeesARemovedParticipantWhoReadsNothingUntilInvitedAgain(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let (owner, bobName) = (try #require(alice.userRecordName), try #require(bob.userRecordName))
            try await SharingTests.album(alice)
            let guid = try await SharingTests.shareAlbum(alice, participants: [(bobName, "READ_WRITE")])
            #expect(try await bob.accept(guid).status == 200)
            #expect(Self.statuses(try await Self.share(alice)) == [owner: "ACCEPTED", bobName: "ACCEPTED"])

            let removed = try await alice.modify(
                "Albums", [shareOp("album-share", type: "update", tag: try await SharingTests.tag(alice, "album-share"))])
            #expect(removed.records.first?["serverErrorCode"] == nil, "\(removed.text)")
            let afterRemoval = try await Self.share(alice)
            #expect(Self.statuses(afterRemoval) == [owner: "ACCEPTED", bobName: "REMOVED"], "\(afterRemoval.text)")
            #expect(try await bob.sharedChanges("Albums", owner: owner).serverErrorCode == "ZONE_NOT_FOUND")
            #expect(try await bob.accept(guid)["results"]?.array?.first?["serverErrorCode"]?.string == "NOT_FOUND")

            // Invited again: pending, then accepted, and reading again.
            let invited = try await alice.modify(
                "Albums",
                [shareOp("album-share", type: "update", participants: [(bobName, "READ_ONLY")],
                         tag: try await SharingTests.tag(alice, "album-share"))])
            #expect(invited.records.first?["serverErrorCode"] == nil, "\(invited.text)")
            #expect(Self.statuses(try await Self.share(alice)) == [owner: "ACCEPTED", bobName: "PENDING"])
            #expect(try await bob.accept(guid).status == 200)
            #expect(TestClient.names(try await bob.sharedChanges("Albums", owner: owner)).contains("photo-1"))
            let listed = try await Self.share(alice).records.first?["participants"]?.array ?? []
            #expect(listed.count == 2, "one entry per participant, not one per invitation: \(listed)")
        }
    }

    /// Changing the public permission removes the pending participants: REMOVED, not gone.
    @Test func pendingParticipantsRemovedByAPermissionChangeStayListed() async throws {
        try await TestServer.with { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let bobName = try #require(bob.userRecordName)
            try await SharingTests.album(alice)
            _ = try await SharingTests.shareAlbum(alice, participants: [(bobName, "READ_ONLY")])
            let opened = try await alice.modify(
                "Albums",
                [sharingOp(
                    "update", "album-share", "cloudkit.share", fields: ["cloudkit.title": "Shared"],
                    extra: ["publicPermission": "READ_ONLY"], tag: try await SharingTests.tag(alice, "album-share"))])
            #expect(opened.records.first?["serverErrorCode"] == nil, "\(opened.text)")
            #expect(Self.statuses(try await Self.share(alice))[bobName] == "REMOVED")
        }
    }
}
