import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusTestSupport
import Testing

/// Sharing a zone or a record hierarchy between users, through CloudKit Web Services'
/// shapes (docs/SHARING.md), on both engines.
@Suite("Sharing")
struct SharingTests {
    /// Alice's zone "Albums": an album (the root of a hierarchy) with two photos, and a
    /// note outside the hierarchy.
    static func album(_ alice: TestClient) async throws {
        #expect(try await alice.createZone("Albums").status == 200)
        let saved = try await alice.modify(
            "Albums",
            [
                sharingOp("create", "album", "Album", fields: ["title": "Summer"]),
                sharingOp("create", "photo-1", fields: ["caption": "Beach"], parent: "album"),
                sharingOp("create", "photo-2", fields: ["caption": "Dunes"], parent: "photo-1"),
                sharingOp("create", "note", "Note", fields: ["text": "private"]),
            ])
        #expect(saved.status == 200 && saved.records.allSatisfy { $0["serverErrorCode"] == nil }, "\(saved.text)")
    }

    /// Shares the album with `participants`; answers the share's short GUID.
    static func shareAlbum(
        _ alice: TestClient, participants: [(user: String, permission: String)] = [],
        emails: [(email: String, permission: String)] = [], publicPermission: String = "NONE"
    ) async throws -> String {
        let reply = try await alice.modify(
            "Albums",
            [
                sharingOp("update", "album", "Album", share: "album-share", tag: try await tag(alice, "album")),
                shareOp(
                    "album-share", publicPermission: publicPermission, participants: participants, emails: emails,
                    title: "Summer album"),
            ], atomic: true)
        #expect(reply.status == 200, "\(reply.text)")
        let share = try #require(reply.records.first { $0["recordName"]?.string == "album-share" })
        #expect(share["serverErrorCode"] == nil, "\(reply.text)")
        return try #require(share["shortGUID"]?.string)
    }

    static func tag(_ client: TestClient, _ name: String, zone: String = "Albums") async throws -> String {
        let reply = try await client.post(
            "records/lookup", ["zoneID": ["zoneName": .string(zone)], "records": [["recordName": .string(name)]]])
        return try #require(reply.records.first?["recordChangeTag"]?.string, "\(reply.text)")
    }

    @Test(arguments: Engine.available) func parentAndShareAreSystemFieldsOfTheRecord(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await Self.album(alice)
            let guid = try await Self.shareAlbum(alice, participants: [])
            let lookup = try await alice.post(
                "records/lookup",
                ["zoneID": ["zoneName": "Albums"], "records": [["recordName": "photo-1"], ["recordName": "album"], ["recordName": "album-share"]]])
            let photo = lookup.records[0]
            #expect(photo["parent"]?["recordName"]?.string == "album", "\(lookup.text)")
            #expect(photo["fields"]?["cloudkit.parent"] == nil)
            #expect(photo["fields"]?["caption"]?["value"]?.string == "Beach")
            #expect(lookup.records[1]["share"]?["recordName"]?.string == "album-share")
            let share = lookup.records[2]
            #expect(share["recordType"]?.string == "cloudkit.share")
            #expect(share["shortGUID"]?.string == guid)
            let url = try #require(share["url"]?.string)
            #expect(url.hasSuffix("/share/\(TestServer.container)/development/\(guid)"), "\(url)")
            let page = try await alice.send(url, method: .GET, body: nil, headers: [])
            #expect(page.status == 200 && page.text.contains(guid) && !page.text.contains("Summer"), "\(page.text)")
            let link = try await alice.send(url, method: .GET, body: nil, headers: [("Accept", "application/json")])
            #expect(link["shortGUID"]?.string == guid && link["containerIdentifier"]?.string == TestServer.container)
            #expect(share["publicPermission"]?.string == "NONE")
            #expect(share["owner"]?["type"]?.string == "OWNER")
            #expect(share["currentUserParticipant"]?["type"]?.string == "OWNER")
            #expect(share["fields"]?["cloudkit.title"]?["value"]?.string == "Summer album")
            #expect(share["fields"]?["cloudkit.shareState"] == nil && share["fields"]?["cloudkit.root"] == nil)

            // The change feed (the written fast path otherwise) lifts them too.
            let feed = try await alice.changes("Albums")
            let fed = try #require(feed.records.first { $0["recordName"]?.string == "photo-2" })
            #expect(fed["parent"]?["recordName"]?.string == "photo-1", "\(feed.text)")

            // A parent is removed by saving it as null.
            let removed = try await alice.modify(
                "Albums",
                [["operationType": "update", "record": ["recordName": "photo-2", "recordType": "Photo", "recordChangeTag": .string(try await Self.tag(alice, "photo-2")), "parent": .null]]])
            #expect(removed.records.first?["parent"] == nil, "\(removed.text)")
            #expect(removed.records.first?["fields"]?["caption"]?["value"]?.string == "Dunes", "\(removed.text)")

            // Reserved field names are refused; a share needs its root or the zone-wide name.
            let reserved = try await alice.modify("Albums", [op("create", "x", fields: ["cloudkit.parent": "y"])])
            #expect(reserved.serverErrorCode == "BAD_REQUEST", "\(reserved.text)")
            let rootless = try await alice.modify("Albums", [shareOp("lonely-share")])
            #expect(rootless.serverErrorCode == "BAD_REQUEST", "\(rootless.text)")
            let inDefault = try await alice.modify("_defaultZone", [shareOp(SharedNames.zoneShare)])
            #expect(inDefault.serverErrorCode == "BAD_REQUEST", "\(inDefault.text)")
        }
    }

    @Test(arguments: Engine.available) func aHierarchyIsReadAndWrittenByItsParticipants(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let carol = try await server.user("carol")
            let owner = try #require(alice.userRecordName)
            try await Self.album(alice)
            let guid = try await Self.shareAlbum(
                alice, participants: [(try #require(bob.userRecordName), "READ_WRITE")],
                emails: [("carol@example.com", "READ_ONLY")])

            // Before accepting: the metadata, nothing of the records.
            let resolved = try await bob.resolve(guid, fetchRoot: true)
            let info = try #require(resolved["results"]?.array?.first, "\(resolved.text)")
            #expect(info["participantStatus"]?.string == "PENDING", "\(resolved.text)")
            #expect(info["participantPermission"]?.string == "READ_WRITE")
            #expect(info["rootRecordName"]?.string == "album")
            #expect(info["rootRecord"]?["fields"]?["title"]?["value"]?.string == "Summer")
            #expect(info["zoneID"]?["ownerRecordName"]?.string == owner)
            #expect(info["ownerIdentity"]?["userRecordName"]?.string == owner)
            #expect(try await bob.sharedChanges("Albums", owner: owner).serverErrorCode == "ZONE_NOT_FOUND")

            let accepted = try await bob.accept(guid)
            #expect(accepted["results"]?.array?.first?["participantStatus"]?.string == "ACCEPTED", "\(accepted.text)")
            let zones = try await bob.post("zones/list", [:], scope: "shared")
            #expect(zones.zones.map { $0["zoneID"]?["ownerRecordName"]?.string } == [owner], "\(zones.text)")
            let feed = try await bob.sharedChanges("Albums", owner: owner)
            #expect(TestClient.names(feed) == ["album", "photo-1", "photo-2", "album-share"], "\(feed.text)")
            let note = try await bob.sharedLookup("Albums", owner: owner, ["note", "photo-2"])
            #expect(note.records[0]["serverErrorCode"]?.string == "NOT_FOUND", "\(note.text)")
            #expect(note.records[1]["fields"]?["caption"]?["value"]?.string == "Dunes")

            // A read-write participant edits and adds under the root; never the root's deletion.
            let tag = try #require(note.records[1]["recordChangeTag"]?.string)
            let edited = try await bob.sharedModify(
                "Albums", owner: owner,
                [
                    sharingOp("update", "photo-2", fields: ["caption": "Dunes at dusk"], tag: tag),
                    sharingOp("create", "photo-3", fields: ["caption": "Pier"], parent: "album"),
                ])
            #expect(edited.status == 200 && edited.records.allSatisfy { $0["serverErrorCode"] == nil }, "\(edited.text)")
            let seen = try await alice.post(
                "records/lookup", ["zoneID": ["zoneName": "Albums"], "records": [["recordName": "photo-2"], ["recordName": "photo-3"]]])
            #expect(seen.records[0]["fields"]?["caption"]?["value"]?.string == "Dunes at dusk")
            #expect(seen.records[0]["modified"]?["userRecordName"]?.string == bob.userRecordName)
            #expect(seen.records[1]["parent"]?["recordName"]?.string == "album")
            for denied in [
                [sharingOp("forceDelete", "album", "Album")],
                [sharingOp("forceUpdate", "note", "Note", fields: ["text": "mine"])],
                [sharingOp("create", "loose", fields: ["caption": "no parent"])],
                [sharingOp("forceUpdate", "photo-1", parent: "note")],
            ] {
                let refused = try await bob.sharedModify("Albums", owner: owner, denied)
                #expect(refused.serverErrorCode == "ACCESS_DENIED", "\(refused.text)")
            }

            // Carol was invited by email, read-only: she reads, never writes.
            #expect(try await carol.accept(guid)["results"]?.array?.first?["participantPermission"]?.string == "READ_ONLY")
            #expect(TestClient.names(try await carol.sharedChanges("Albums", owner: owner)).contains("photo-3"))
            let readOnly = try await carol.sharedModify(
                "Albums", owner: owner, [sharingOp("forceUpdate", "photo-1", fields: ["caption": "carol was here"])])
            #expect(readOnly.serverErrorCode == "ACCESS_DENIED", "\(readOnly.text)")
            #expect(try await alice.changes("Albums").records.allSatisfy { $0["fields"]?["caption"]?["value"]?.string != "carol was here" })
        }
    }

    @Test(arguments: Engine.available) func endingAShareRemovesTheZoneFromTheParticipant(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let carol = try await server.user("carol")
            let owner = try #require(alice.userRecordName)
            try await Self.album(alice)
            let guid = try await Self.shareAlbum(
                alice, participants: [(try #require(bob.userRecordName), "READ_WRITE"), (try #require(carol.userRecordName), "READ_ONLY")])
            _ = try await bob.accept(guid)
            _ = try await carol.accept(guid)
            let bobToken = try #require(try await bob.databaseChanges()["syncToken"]?.string)
            let first = try await carol.databaseChanges()
            #expect(first.zones.map { $0["zoneID"]?["zoneName"]?.string } == ["Albums"], "\(first.text)")
            let carolToken = try #require(first["syncToken"]?.string)

            // Alice removes bob: his next database changes list the zone as deleted, and it is gone.
            let removed = try await alice.modify(
                "Albums",
                [shareOp("album-share", type: "update", participants: [(try #require(carol.userRecordName), "READ_ONLY")],
                         tag: try await Self.tag(alice, "album-share"))])
            #expect(removed.records.first?["serverErrorCode"] == nil, "\(removed.text)")
            let afterRemoval = try await bob.databaseChanges(since: bobToken)
            #expect(afterRemoval.zones.first?["deleted"]?.bool == true, "\(afterRemoval.text)")
            #expect(try await bob.sharedChanges("Albums", owner: owner).serverErrorCode == "ZONE_NOT_FOUND")
            #expect(try await bob.accept(guid)["results"]?.array?.first?["serverErrorCode"]?.string == "NOT_FOUND")

            // Carol leaves by deleting the share in her shared database.
            let left = try await carol.sharedModify("Albums", owner: owner, [sharingOp("forceDelete", "album-share", "cloudkit.share")])
            #expect(left.records.first?["deleted"]?.bool == true, "\(left.text)")
            #expect(try await carol.databaseChanges(since: carolToken).zones.first?["deleted"]?.bool == true)
            // The owner still sees both, REMOVED (as CloudKit shows them), and nobody else.
            let share = try await alice.post("records/lookup", ["zoneID": ["zoneName": "Albums"], "records": [["recordName": "album-share"]]])
            let listed = share.records.first?["participants"]?.array ?? []
            let statuses = Dictionary(
                uniqueKeysWithValues: listed.compactMap { item in
                    item["userIdentity"]?["userRecordName"]?.string.map { ($0, item["acceptanceStatus"]?.string ?? "") }
                })
            #expect(
                statuses == [owner: "ACCEPTED", try #require(bob.userRecordName): "REMOVED", try #require(carol.userRecordName): "REMOVED"],
                "\(share.text)")

            // Deleting the root deletes the share.
            _ = try await alice.modify("Albums", [sharingOp("forceDelete", "album", "Album")])
            let gone = try await alice.post("records/lookup", ["zoneID": ["zoneName": "Albums"], "records": [["recordName": "album-share"]]])
            #expect(gone.records.first?["serverErrorCode"]?.string == "NOT_FOUND", "\(gone.text)")
        }
    }

    @Test(arguments: Engine.available) func aPublicShareIsOpenToAnyoneWithItsURLAndAPrivateOneIsNot(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let dave = try await server.user("dave")
            let owner = try #require(alice.userRecordName)
            #expect(try await alice.createZone("Club").status == 200)
            _ = try await alice.modify("Club", [sharingOp("create", "rules", "Note", fields: ["text": "be kind"])])
            let saved = try await alice.modify("Club", [shareOp(SharedNames.zoneShare, publicPermission: "READ_ONLY")])
            let guid = try #require(saved.records.first?["shortGUID"]?.string, "\(saved.text)")
            let accepted = try await dave.accept(guid)
            let info = try #require(accepted["results"]?.array?.first)
            #expect(info["participantType"]?.string == "PUBLIC_USER", "\(accepted.text)")
            #expect(info["participantPermission"]?.string == "READ_ONLY")
            #expect(TestClient.names(try await dave.sharedChanges("Club", owner: owner)).contains("rules"))
            let write = try await dave.sharedModify("Club", owner: owner, [sharingOp("forceUpdate", "rules", "Note", fields: ["text": "x"])])
            #expect(write.serverErrorCode == "ACCESS_DENIED", "\(write.text)")

            // A private share: a stranger with its short GUID learns nothing.
            try await Self.album(alice)
            let privateGUID = try await Self.shareAlbum(alice)
            for reply in [try await dave.resolve(privateGUID), try await dave.accept(privateGUID), try await dave.resolve("no-such-guid")] {
                #expect(reply["results"]?.array?.first?["serverErrorCode"]?.string == "NOT_FOUND", "\(reply.text)")
            }
            #expect(try await dave.sharedChanges("Albums", owner: owner).serverErrorCode == "ZONE_NOT_FOUND")
        }
    }
}

enum SharedNames {
    static let zoneShare = "cloudkit.zoneshare"
}

extension SharingTests {
    @Test(arguments: Engine.available) func lockedSavesAndAtomicBatchesHoldInSharedZones(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let owner = try #require(alice.userRecordName)
            try await Self.album(alice)
            _ = try await bob.accept(try await Self.shareAlbum(alice, participants: [(try #require(bob.userRecordName), "READ_WRITE")]))
            let stale = try await Self.tag(alice, "photo-1")
            _ = try await alice.modify("Albums", [sharingOp("update", "photo-1", fields: ["caption": "Alice's"], tag: stale)])

            let conflict = try await bob.sharedModify(
                "Albums", owner: owner, [sharingOp("update", "photo-1", fields: ["caption": "Bob's"], tag: stale)])
            let item = try #require(conflict.records.first)
            #expect(item["serverErrorCode"]?.string == "CONFLICT", "\(conflict.text)")
            #expect(item["serverRecord"]?["fields"]?["caption"]?["value"]?.string == "Alice's")
            #expect(item["serverRecord"]?["parent"]?["recordName"]?.string == "album", "lifted in the conflict too")
            #expect(item["serverRecord"]?["fields"]?["cloudkit.parent"] == nil)

            // Atomic: one failing operation writes nothing.
            let atomic = try await bob.post(
                "records/modify",
                [
                    "zoneID": ["zoneName": "Albums", "ownerRecordName": .string(owner)], "atomic": true,
                    "operations": [
                        sharingOp("create", "photo-7", fields: ["caption": "new"], parent: "album"),
                        sharingOp("update", "photo-2", fields: ["caption": "x"], tag: "stale-tag"),
                    ],
                ], scope: "shared")
            #expect(atomic.records.first?["serverErrorCode"]?.string == "ATOMIC_ERROR", "\(atomic.text)")
            #expect(try await bob.sharedLookup("Albums", owner: owner, ["photo-7"]).records.first?["serverErrorCode"]?.string == "NOT_FOUND")
        }
    }
}

extension SharingTests {
    /// Random and mangled shared database tokens are BAD_REQUEST (or, in the unsigned format
    /// of earlier releases, base64 of a JSON list, CHANGE_TOKEN_EXPIRED), never a trap or a
    /// 5xx, and the server keeps serving.
    @Test func malformedSharedDatabaseTokensAreRefused() async throws {
        try await TestServer.with { server in
            let bob = try await server.user("bob")
            let good = try #require(try await bob.databaseChanges()["syncToken"]?.string)
            var seed: UInt64 = 0x5eed_5a7e
            func next() -> UInt64 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return seed >> 33
            }
            let pieces = ["[", "]", "[[", "\"a\"", "1", "-1", "1e99", "null", "{}", ",", "\"\"", "[\"o\",\"z\",1]", "true", "9223372036854775808"]
            var tokens: [String] = ["", "%%%", good + "x", String(good.dropLast()), "W10=", "W1tdXQ==", "bnVsbA=="]
            for _ in 0..<150 {
                let count = Int(next() % 8) + 1
                let text = (0..<count).map { _ in pieces[Int(next() % UInt64(pieces.count))] }.joined()
                tokens.append(Data(text.utf8).base64EncodedString())
                tokens.append(String((0..<Int(next() % 40)).map { _ in Character(UnicodeScalar(UInt8(next() % 94 + 33))) }))
            }
            for token in tokens {
                let reply = try await bob.databaseChanges(since: token)
                #expect(
                    reply.serverErrorCode == "BAD_REQUEST" || reply.serverErrorCode == "CHANGE_TOKEN_EXPIRED",
                    "\(token): \(reply.text)")
            }
            #expect(try await bob.databaseChanges(since: good).status == 200)
        }
    }
}
