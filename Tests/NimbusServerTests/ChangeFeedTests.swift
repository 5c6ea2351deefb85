import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

@Suite("Change tokens and feeds")
struct ChangeFeedTests {
    @Test(arguments: Engine.available) func tenEditsOfOneRecordComeBackAsOneRecordInItsLatestState(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let start = try await alice.changes("Z")
            var tag = try #require(
                try await alice.modify("Z", [op("create", "r", fields: ["n": 0])]).records.first?["recordChangeTag"]?.string)
            for edit in 1...10 {
                let reply = try await alice.modify("Z", [op("update", "r", fields: ["n": .int(edit)], tag: tag)])
                tag = try #require(reply.records.first?["recordChangeTag"]?.string)
            }
            let delta = try await alice.changes("Z", since: start["syncToken"]?.string)
            #expect(delta.records.count == 1)
            #expect(delta.records.first?["fields"]?["n"]?["value"] == 10)
            #expect(delta.records.first?["recordChangeTag"]?.string == tag)
            #expect(delta["moreComing"] == false)
        }
    }

    @Test(arguments: Engine.available) func createdAndDeletedSinceTheTokenYieldsNothingAndDeletedYieldsATombstone(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.modify("Z", [op("create", "old")])
            let token = try #require(try await alice.changes("Z")["syncToken"]?.string)
            _ = try await alice.modify("Z", [op("create", "temp")])
            _ = try await alice.modify("Z", [op("forceDelete", "temp"), op("forceDelete", "old")])
            let delta = try await alice.changes("Z", since: token)
            #expect(delta.records.count == 1)
            #expect(delta.records.first?["recordName"] == "old")
            #expect(delta.records.first?["deleted"] == true)
            // From no token, deleted records are simply absent.
            let fresh = try await alice.changes("Z")
            #expect(fresh.records.isEmpty)
        }
    }

    @Test(arguments: Engine.available) func aRecordDeletedRecreatedAndDeletedAgainShowsAsDeletedToAReaderOfTheFirstIncarnation(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.modify("Z", [op("create", "r")])
            let token = try #require(try await alice.changes("Z")["syncToken"]?.string)
            _ = try await alice.modify("Z", [op("forceDelete", "r")])
            _ = try await alice.modify("Z", [op("create", "r")])
            _ = try await alice.modify("Z", [op("forceDelete", "r")])
            let delta = try await alice.changes("Z", since: token)
            #expect(delta.records.map { $0["recordName"]?.string } == ["r"])
            #expect(delta.records.first?["deleted"] == true)
        }
    }

    @Test(arguments: Engine.available) func pagingIsCompleteAndFreeOfDuplicatesWhileWritesContinue(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let names = (0..<120).map { "r\($0)" }
            for chunk in stride(from: 0, to: names.count, by: 40) {
                _ = try await alice.modify("Z", names[chunk..<chunk + 40].map { op("create", $0, fields: ["v": 0]) })
            }
            var seen: [String: Int64] = [:]
            var token: String?
            var pages = 0
            var writes = 0
            repeat {
                let page = try await alice.changes("Z", since: token, limit: 25)
                for record in page.records {
                    let name = try #require(record["recordName"]?.string)
                    let value = record["fields"]?["v"]?["value"]?.int64 ?? 0
                    // A record may come again only in a newer state, never as a duplicate.
                    if let earlier = seen[name] { #expect(value > earlier, "duplicate \(name)") }
                    seen[name] = value
                }
                token = page["syncToken"]?.string
                pages += 1
                // Keep writing between pages: edit early records and add new ones.
                if writes < 5 {
                    writes += 1
                    _ = try await alice.modify(
                        "Z", [op("forceUpdate", "r\(writes)", fields: ["v": .int(writes)]), op("create", "new\(writes)")])
                }
                if page["moreComing"] != true { break }
            } while pages < 100
            // Everything written before the last page was read is seen, in its latest state.
            for name in names { #expect(seen[name] != nil, "missed \(name)") }
            let tail = try await alice.changes("Z", since: token)
            for record in tail.records { seen[record["recordName"]!.string!] = record["fields"]?["v"]?["value"]?.int64 ?? 0 }
            for index in 1...5 {
                #expect(seen["new\(index)"] != nil)
                #expect(seen["r\(index)"] == Int64(index))
            }
        }
    }

    @Test(arguments: Engine.available) func resultsLimitIsCappedAt200(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.modify("Z", (0..<200).map { op("create", "a\($0)") })
            _ = try await alice.modify("Z", (0..<10).map { op("create", "b\($0)") })
            let page = try await alice.changes("Z", limit: 5000)
            #expect(page.records.count == 200)
            #expect(page["moreComing"] == true)
            let rest = try await alice.changes("Z", since: page["syncToken"]?.string)
            #expect(rest.records.count == 10)
            #expect(rest["moreComing"] == false)
        }
    }

    @Test(arguments: Engine.available) func tokensOlderThanTheTombstoneHorizonExpire(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.tombstoneRetention = .zero }) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.modify("Z", [op("create", "a"), op("create", "b")])
            let token = try #require(try await alice.changes("Z")["syncToken"]?.string)
            _ = try await alice.modify("Z", [op("forceDelete", "a")])
            let report = try await server.server.compactNow()
            #expect(report.tombstonesRemoved == 1)
            let expired = try await alice.changes("Z", since: token)
            #expect(expired.status == 410)
            #expect(expired.serverErrorCode == "CHANGE_TOKEN_EXPIRED")
            // The documented recovery: fetch again from no token.
            let refetch = try await alice.changes("Z")
            #expect(refetch.records.map { $0["recordName"]?.string } == ["b"])
            // A token taken after compaction keeps working.
            let fresh = try #require(refetch["syncToken"]?.string)
            _ = try await alice.modify("Z", [op("create", "c")])
            #expect(try await alice.changes("Z", since: fresh).records.count == 1)
        }
    }

    @Test(arguments: Engine.available) func deletingAZoneDeletesItsRecordsAndShowsInZoneAndDatabaseChanges(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Keep")
            _ = try await alice.createZone("Gone")
            _ = try await alice.modify("Gone", [op("create", "r")])
            let oldGoneToken = try #require(try await alice.changes("Gone")["syncToken"]?.string)
            let metaToken = try #require(try await alice.post("zones/changes", [:])["metaSyncToken"]?.string)
            let dbToken = try #require(try await alice.post("changes/database", [:])["syncToken"]?.string)

            let deleted = try await alice.post(
                "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "Gone"]]]]])
            #expect(deleted.zones.first?["deleted"] == true)

            let zoneChanges = try await alice.post("zones/changes", ["metaSyncToken": .string(metaToken)])
            #expect(zoneChanges.zones.count == 1)
            #expect(zoneChanges.zones.first?["zoneID"]?["zoneName"] == "Gone")
            #expect(zoneChanges.zones.first?["deleted"] == true)
            // Clients that send syncToken instead of metaSyncToken get the same answer.
            let tolerant = try await alice.post("zones/changes", ["syncToken": .string(metaToken)])
            #expect(tolerant.zones.count == 1)

            let dbChanges = try await alice.post("changes/database", ["syncToken": .string(dbToken)])
            #expect(dbChanges.zones.map { $0["zoneID"]?["zoneName"]?.string } == ["Gone"])
            #expect(dbChanges.zones.first?["deleted"] == true)

            #expect(try await alice.changes("Gone").serverErrorCode == "ZONE_NOT_FOUND")
            let list = try await alice.get("zones/list")
            #expect(list.zones.compactMap { $0["zoneID"]?["zoneName"]?.string } == ["_defaultZone", "Keep"])

            // Re-created, it is empty, and a token of the deleted zone says that zone is gone.
            _ = try await alice.createZone("Gone")
            #expect(try await alice.changes("Gone").records.isEmpty)
            #expect(try await alice.changes("Gone", since: oldGoneToken).serverErrorCode == "ZONE_NOT_FOUND")
        }
    }

    @Test(arguments: Engine.available) func databaseChangesNameOnlyTheZonesThatChanged(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("ReadingList")
            _ = try await alice.createZone("ReadingHistory")
            let token = try #require(try await alice.post("changes/database", [:])["syncToken"]?.string)
            _ = try await alice.modify("ReadingList", [op("create", "bookmark")])
            let changes = try await alice.post("changes/database", ["syncToken": .string(token)])
            #expect(changes.zones.map { $0["zoneID"]?["zoneName"]?.string } == ["ReadingList"])
            let next = try #require(changes["syncToken"]?.string)
            #expect(try await alice.post("changes/database", ["syncToken": .string(next)]).zones.isEmpty)
        }
    }

    @Test(arguments: Engine.available) func changesZoneFetchesSeveralZonesAndReportsErrorsInPlace(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("A")
            _ = try await alice.modify("A", [op("create", "r")])
            let reply = try await alice.post(
                "changes/zone", ["zones": [["zoneID": ["zoneName": "A"]], ["zoneID": ["zoneName": "Missing"]]]])
            #expect(reply.zones.count == 2)
            #expect(reply.zones[0]["records"]?.array?.count == 1)
            #expect(reply.zones[1]["serverErrorCode"] == "ZONE_NOT_FOUND")
            #expect(reply.zones[1]["zoneID"]?["zoneName"] == "Missing")
        }
    }

    @Test(arguments: Engine.available) func aTokenFromAnotherKindIsABadRequest(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let dbToken = try #require(try await alice.post("changes/database", [:])["syncToken"]?.string)
            let reply = try await alice.changes("Z", since: dbToken)
            #expect(reply.status == 400)
            #expect(reply.serverErrorCode == "BAD_REQUEST")
            #expect(try await alice.changes("Z", since: "garbage!").status == 400)
        }
    }
}
