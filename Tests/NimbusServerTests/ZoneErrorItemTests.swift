import NimbusProtocol
import NimbusTestSupport
import Testing

/// A zone's per-item error names the zone as a success item does, `{zoneName,
/// ownerRecordName}` with the database owner's record name, however the request named the
/// owner (not at all, `__defaultOwner__`, or the owner's name); the OpenAPI document's
/// `ZoneID` requires `ownerRecordName`.
@Suite("Zone IDs of error items")
struct ZoneErrorItemTests {
    @Test(arguments: Engine.available) func changesZoneErrorItemsCarryTheOwner(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let owner = try #require(alice.userRecordName)
            _ = try await alice.createZone("A")
            let reply = try await alice.post(
                "changes/zone",
                [
                    "zones": [
                        ["zoneID": ["zoneName": "A"]],
                        ["zoneID": ["zoneName": "Missing"]],
                        ["zoneID": ["zoneName": "Missing2", "ownerRecordName": "__defaultOwner__"]],
                        ["zoneID": ["zoneName": "Missing3", "ownerName": .string(owner)]],
                        ["zoneID": ["zoneName": "A", "ownerRecordName": "_someoneElse"]],
                    ]
                ])
            #expect(reply.status == 200)
            #expect(reply.zones.count == 5)
            #expect(reply.zones[0]["zoneID"] == ["zoneName": "A", "ownerRecordName": .string(owner)])
            for (index, name) in [(1, "Missing"), (2, "Missing2"), (3, "Missing3")] {
                #expect(reply.zones[index]["serverErrorCode"] == "ZONE_NOT_FOUND")
                #expect(reply.zones[index]["zoneID"] == ["zoneName": .string(name), "ownerRecordName": .string(owner)])
            }
            // Another owner's zone is refused and named as the request named it.
            #expect(reply.zones[4]["serverErrorCode"] == "ACCESS_DENIED")
            #expect(reply.zones[4]["zoneID"] == ["zoneName": "A", "ownerRecordName": "_someoneElse"])
        }
    }

    @Test(arguments: Engine.available) func zonesLookupAndModifyErrorItemsCarryTheOwner(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let owner = try #require(alice.userRecordName)
            let expected: JSON = ["zoneName": "Missing", "ownerRecordName": .string(owner)]
            let lookup = try await alice.post(
                "zones/lookup", ["zones": [["zoneID": ["zoneName": "Missing", "ownerRecordName": "__defaultOwner__"]]]])
            #expect(lookup.zones.first?["serverErrorCode"] == "ZONE_NOT_FOUND")
            #expect(lookup.zones.first?["zoneID"] == expected)
            let modify = try await alice.post(
                "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "Missing"]]]]])
            if modify.zones.first?["serverErrorCode"] != nil {
                #expect(modify.zones.first?["zoneID"] == expected)
            }
        }
    }
}
