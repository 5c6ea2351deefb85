import NimbusProtocol
import NimbusTestSupport
import Testing

/// Every operation of the `shared` database for every kind of user around a share: reads
/// and writes happen exactly where the share allows them, on both engines.
@Suite("Sharing: access matrix")
struct SharingAccessMatrixTests {
    enum Role: String, CaseIterable {
        case readWrite, readOnly, invitedNotAccepted, strangerWithPrivateURL, otherUser, revoked
    }

    /// What a role may do: read the shared records, write them.
    static func reads(_ role: Role) -> Bool { role == .readWrite || role == .readOnly }
    static func writes(_ role: Role) -> Bool { role == .readWrite }

    @Test(arguments: Engine.available) func everyOperationForEveryRole(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let owner = try #require(alice.userRecordName)
            var clients: [Role: TestClient] = [:]
            for role in Role.allCases { clients[role] = try await server.user(role.rawValue) }
            func name(_ role: Role) throws -> String { try #require(clients[role]?.userRecordName) }

            try await SharingTests.album(alice)
            let guid = try await SharingTests.shareAlbum(
                alice,
                participants: [
                    (try name(.readWrite), "READ_WRITE"), (try name(.readOnly), "READ_ONLY"),
                    (try name(.invitedNotAccepted), "READ_WRITE"), (try name(.revoked), "READ_WRITE"),
                ])
            for role in [Role.readWrite, .readOnly, .revoked] {
                _ = try await clients[role]!.accept(guid)
            }
            // The revoked participant is removed after accepting.
            _ = try await alice.modify(
                "Albums",
                [shareOp(
                    "album-share", type: "update",
                    participants: [
                        (try name(.readWrite), "READ_WRITE"), (try name(.readOnly), "READ_ONLY"),
                        (try name(.invitedNotAccepted), "READ_WRITE"),
                    ], tag: try await SharingTests.tag(alice, "album-share"))])

            let zone: JSON = ["zoneName": "Albums", "ownerRecordName": .string(owner)]
            for role in Role.allCases {
                let client = clients[role]!
                let reads = Self.reads(role)
                let context = Comment(rawValue: role.rawValue)

                // Resolving: open to the invited, closed to strangers and the revoked.
                let resolved = try await client.resolve(guid)["results"]?.array?.first
                let resolvable = reads || role == .invitedNotAccepted
                #expect((resolved?["serverErrorCode"] == nil) == resolvable, context)

                let list = try await client.post("zones/list", [:], scope: "shared")
                #expect(list.zones.contains { $0["zoneID"]?["zoneName"]?.string == "Albums" } == reads, context)
                let database = try await client.databaseChanges()
                #expect(database.zones.contains { $0["zoneID"]?["zoneName"]?.string == "Albums" } == reads, context)
                let lookupZone = try await client.post("zones/lookup", ["zones": [["zoneID": zone]]], scope: "shared")
                #expect((lookupZone.zones.first?["serverErrorCode"] == nil) == reads, context)

                let feed = try await client.sharedChanges("Albums", owner: owner)
                #expect(feed.serverErrorCode == (reads ? nil : "ZONE_NOT_FOUND"), context)
                if reads { #expect(!TestClient.names(feed).contains("note"), context) }
                let lookup = try await client.sharedLookup("Albums", owner: owner, ["photo-1", "note"])
                if reads {
                    #expect(lookup.records.first?["recordName"]?.string == "photo-1", context)
                    #expect(lookup.records.last?["serverErrorCode"]?.string == "NOT_FOUND", context)
                } else {
                    #expect(lookup.serverErrorCode == "ZONE_NOT_FOUND", context)
                }
                let query = try await client.post(
                    "records/query", ["zoneID": zone, "query": ["recordType": "Photo"]], scope: "shared")
                #expect(query.serverErrorCode == (reads ? nil : "ZONE_NOT_FOUND"), "\(role): \(query.text)")
                if reads { #expect(TestClient.names(query).isSuperset(of: ["photo-1", "photo-2"]), "\(role): \(query.text)") }
                let noteQuery = try await client.post(
                    "records/query", ["zoneID": zone, "query": ["recordType": "Note"]], scope: "shared")
                #expect(TestClient.names(noteQuery).isEmpty, context)

                // Writes: a child of the album, an edit, a deletion.
                let writes = Self.writes(role)
                let expected = writes ? nil : (reads ? "ACCESS_DENIED" : "ZONE_NOT_FOUND")
                for operation in [
                    sharingOp("create", "child-\(role.rawValue)", fields: ["caption": "new"], parent: "album"),
                    sharingOp("forceUpdate", "photo-2", fields: ["caption": .string("by \(role.rawValue)")]),
                    sharingOp("forceUpdate", "note", "Note", fields: ["text": .string("by \(role.rawValue)")]),
                ] {
                    let reply = try await client.sharedModify("Albums", owner: owner, [operation])
                    let isNote = operation["record"]?["recordName"]?.string == "note"
                    let code = reply.serverErrorCode ?? reply.records.first?["serverErrorCode"]?.string
                    #expect(code == (isNote && reads ? "ACCESS_DENIED" : expected), "\(role): \(reply.text)")
                }
                // Zones belong to their owner; the private database holds only the caller's own.
                let zoneDelete = try await client.post(
                    "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": zone]]]], scope: "shared")
                #expect(zoneDelete.serverErrorCode == "ACCESS_DENIED", context)
                let privateRead = try await client.post(
                    "records/lookup", ["zoneID": zone, "records": [["recordName": "photo-1"]]], scope: "private")
                #expect(privateRead.serverErrorCode == "ACCESS_DENIED", context)
            }

            // Nothing but the read-write participant's writes reached alice's records.
            let records = try await alice.changes("Albums").records
            let captions = records.compactMap { $0["fields"]?["caption"]?["value"]?.string }
            #expect(captions.filter { $0.hasPrefix("by ") } == ["by readWrite"])
            #expect(records.first { $0["recordName"]?.string == "note" }?["fields"]?["text"]?["value"]?.string == "private")
            #expect(Set(records.compactMap { $0["recordName"]?.string }.filter { $0.hasPrefix("child-") }) == ["child-readWrite"])

            // Deletions reach exactly the participants the record was shared with.
            let reader = clients[.readOnly]!
            let token = try #require(try await reader.sharedChanges("Albums", owner: owner)["syncToken"]?.string)
            _ = try await alice.modify(
                "Albums", [sharingOp("forceDelete", "note", "Note"), sharingOp("forceDelete", "photo-2")])
            let after = try await reader.sharedChanges("Albums", owner: owner, since: token)
            let deleted = after.records.filter { $0["deleted"]?.bool == true }.compactMap { $0["recordName"]?.string }
            #expect(deleted == ["photo-2"], "\(after.text)")
        }
    }
}
