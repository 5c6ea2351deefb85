import Foundation
import NimbusProtocol
import NimbusTestSupport
import Testing

/// `zones/list` and `zones/lookup` name a zone's share (`cloudkit.zoneshare`) when the zone is
/// shared whole, for the owner and for a participant: what CloudKit's `CKRecordZone.share` holds.
@Suite("Zone shares in zone listings")
struct ZoneShareListingTests {
    @Test(arguments: Engine.available) func aZoneSharedWholeListsItsShare(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let owner = try #require(alice.userRecordName)
            #expect(try await alice.createZone("Club").status == 200)
            #expect(try await alice.createZone("Plain").status == 200)
            let before = try await alice.post("zones/list", [:])
            #expect(before.status == 200 && !before.text.contains("cloudkit.zoneshare"), "\(before.text)")

            let saved = try await alice.modify(
                "Club", [shareOp(SharedNames.zoneShare, participants: [(try #require(bob.userRecordName), "READ_ONLY")])])
            let guid = try #require(saved.records.first?["shortGUID"]?.string, "\(saved.text)")

            let listed = try await alice.post("zones/list", [:])
            let zones = try #require(listed["zones"]?.array, "\(listed.text)")
            let club = try #require(zones.first { $0["zoneID"]?["zoneName"]?.string == "Club" })
            #expect(club["share"]?["recordName"]?.string == SharedNames.zoneShare, "\(listed.text)")
            #expect(club["share"]?["zoneID"]?["zoneName"]?.string == "Club")
            #expect(zones.first { $0["zoneID"]?["zoneName"]?.string == "Plain" }?["share"] == nil)
            let looked = try await alice.post("zones/lookup", ["zones": [["zoneName": "Club"], ["zoneName": "Plain"]]])
            #expect(looked["zones"]?.array?.map { $0["share"]?["recordName"]?.string } == [SharedNames.zoneShare, nil], "\(looked.text)")

            _ = try await bob.accept(guid)
            let shared = try await bob.post("zones/list", [:], scope: "shared")
            let seen = try #require(shared["zones"]?.array?.first, "\(shared.text)")
            #expect(seen["share"]?["recordName"]?.string == SharedNames.zoneShare, "\(shared.text)")
            #expect(seen["share"]?["zoneID"]?["ownerRecordName"]?.string == owner)

            // The share deleted: the zone lists no share.
            let tag = try await SharingTests.tag(alice, SharedNames.zoneShare, zone: "Club")
            let deleted = try await alice.modify(
                "Club", [["operationType": "delete", "record": ["recordName": .string(SharedNames.zoneShare), "recordChangeTag": .string(tag)]]])
            #expect(deleted.status == 200, "\(deleted.text)")
            #expect(!(try await alice.post("zones/list", [:]).text.contains("cloudkit.zoneshare")))
        }
    }
}
