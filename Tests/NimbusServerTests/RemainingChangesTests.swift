import NimbusProtocol
import NimbusTestSupport
import Testing

/// Nimbus's `records/changes` extension for progress displays: `"countRemaining": true` in
/// the request, `"remainingChanges"` in the answer.
@Suite("Remaining changes of a zone's feed")
struct RemainingChangesTests {
    func page(_ client: TestClient, _ zone: String, since token: String?, limit: Int, counting: JSON? = true) async throws
        -> TestClient.Reply
    {
        var body: [String: JSON] = ["zoneID": ["zoneName": .string(zone)], "resultsLimit": .int(limit)]
        if let token { body["syncToken"] = .string(token) }
        if let counting { body["countRemaining"] = counting }
        return try await client.post("records/changes", .object(body))
    }

    /// 50 records in pages of 20, some edited and one deleted after a first sync began:
    /// each page's count is what the rest of the feed returns (a record changed since counts
    /// once, a deleted one the reader had as its tombstone), another zone's changes do not count, and the
    /// last page says 0. Asking without the flag gets no count.
    @Test(arguments: Engine.available) func theAnswerSaysHowManyChangesFollowThePage(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.createZone("Other")
            for chunk in stride(from: 0, to: 50, by: 25) {
                _ = try await alice.modify("Z", (chunk..<chunk + 25).map { op("create", "r\($0)") })
            }
            let first = try await page(alice, "Z", since: nil, limit: 20)
            #expect(first.status == 200)
            #expect(first["remainingChanges"]?.int64 == Int64(50 - first.records.count))
            let token = try #require(first["syncToken"]?.string)
            _ = try await alice.modify("Other", (0..<5).map { op("create", "o\($0)") })
            _ = try await alice.modify("Z", [op("forceUpdate", "r30", fields: ["v": 1]), op("forceDelete", "r5")])
            _ = try await alice.modify("Z", [op("forceUpdate", "r30", fields: ["v": 2]), op("forceUpdate", "r2", fields: ["v": 1])])

            // The rest of the walk from the first page, page by page.
            var counts: [Int64?] = []
            var returned: [Int] = []
            var since: String? = token
            while true {
                let next = try await page(alice, "Z", since: since, limit: 20)
                #expect(next.status == 200)
                counts.append(next["remainingChanges"]?.int64)
                returned.append(next.records.count)
                since = next["syncToken"]?.string
                if next["moreComing"] != true { break }
            }
            // r2 (edited), r5 (a tombstone) and the records after the first page (r30 once).
            #expect(returned.reduce(0, +) == 50 - first.records.count + 2)
            let expected = returned.indices.map { Int64(returned[($0 + 1)...].reduce(0, +)) }
            #expect(counts == expected.map(Optional.some))
            #expect(counts.last == 0)

            let plain = try await page(alice, "Z", since: nil, limit: 20, counting: nil)
            #expect(plain.status == 200)
            #expect(plain["remainingChanges"] == nil)
            #expect(try await page(alice, "Z", since: nil, limit: 20, counting: false)["remainingChanges"] == nil)
        }
    }

    @Test(arguments: Engine.available) func aFlagThatIsNotABooleanIsRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let reply = try await page(alice, "Z", since: nil, limit: 20, counting: "yes")
            #expect(reply.status == 400)
            #expect(reply["serverErrorCode"] == "BAD_REQUEST")
            #expect(reply["reason"]?.string?.contains("countRemaining") == true)
        }
    }
}
