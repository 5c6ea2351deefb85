import Foundation
import NIOHTTP1
import NimbusStore
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// `/metrics` scraped after known requests: each counter grows by exactly what was done.
@Suite("Metrics")
struct MetricsTests {
    static func requests(_ operation: String, _ status: Int) -> String {
        #"nimbus_http_requests_total{operation="\#(operation)",status="\#(status)"}"#
    }

    @Test(arguments: Engine.available) func countersGrowByExactlyTheRequestsServed(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            #expect(try await alice.createZone("Notes").status == 200)
            let before = try await MetricsScrape.of(server.server.baseURL)
            #expect(before.status == 200)
            #expect(before.headers.first(name: "Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)

            #expect(try await alice.modify("Notes", [op("create", "a", fields: ["t": "1"]), op("create", "b")]).status == 200)
            #expect(try await alice.modify("Notes", [op("create", "c")]).status == 200)
            #expect(try await alice.modify("Notes", [op("forceDelete", "c")]).status == 200)
            let bad = try await alice.post("records/modify", ["zoneID": ["zoneName": "Notes"], "operations": [["operationType": "explode"]]])
            #expect(bad.status == 400)
            let lookup = try await alice.post(
                "records/lookup", ["zoneID": ["zoneName": "Notes"], "records": [["recordName": "a"], ["recordName": "b"], ["recordName": "zz"]]])
            #expect(lookup.records.count == 3)
            let feed = try await alice.changes("Notes")
            #expect(feed.status == 200)
            let missingZone = try await alice.changes("NoSuchZone")
            #expect(missingZone.serverErrorCode == "ZONE_NOT_FOUND")

            let after = try await MetricsScrape.of(server.server.baseURL)
            #expect(after.delta(Self.requests("records/modify", 200), since: before) == 3)
            #expect(after.delta(Self.requests("records/modify", 400), since: before) == 1)
            #expect(after.delta(Self.requests("records/lookup", 200), since: before) == 1)
            #expect(after.delta(Self.requests("records/changes", 200), since: before) == 1)
            #expect(after.delta(Self.requests("metrics", 200), since: before) == 1, "the first scrape itself")
            #expect(after.delta(#"nimbus_http_request_duration_seconds_count{operation="records/modify"}"#, since: before) == 4)
            #expect(after.delta(#"nimbus_api_errors_total{code="BAD_REQUEST"}"#, since: before) == 1)
            #expect(after.delta(#"nimbus_api_errors_total{code="ZONE_NOT_FOUND"}"#, since: before) == 1)
            #expect(after.delta("nimbus_commits_total", since: before) == 3)
            #expect(after.delta(#"nimbus_records_written_total{kind="saved"}"#, since: before) == 3)
            #expect(after.delta(#"nimbus_records_written_total{kind="deleted"}"#, since: before) == 1)
            #expect(after.delta(#"nimbus_records_read_total{via="lookup"}"#, since: before) == 2)
            #expect(after.delta(#"nimbus_records_read_total{via="changes"}"#, since: before) == Double(feed.records.count))
            #expect(feed.records.count >= 2)
            #expect(after.delta("nimbus_change_pages_total", since: before) == 1)
            #expect(after.delta(#"nimbus_store_errors_total{edge="api"}"#, since: before) == 0)
            // Label values come from the fixed operation set, never from what clients send.
            _ = try await alice.send(
                "\(server.server.baseURL)/database/1/\(TestServer.container)/development/private/made/up/path",
                method: .POST, body: Array("{}".utf8), headers: [])
            let last = try await MetricsScrape.of(server.server.baseURL)
            #expect(!last.text.contains("made/up"))
            #expect(last.delta(Self.requests("other", 404), since: after) == 1)
        }
    }

    /// Every metric says what it counts: a `# HELP` line before its `# TYPE` line (a metric
    /// added without a text in `MetricHelp` fails here).
    @Test func everyMetricHasHelpText() async throws {
        try await TestServer.with { server in
            let alice = try await server.user("alice")
            #expect(try await alice.createZone("Notes").status == 200)
            #expect(try await alice.modify("Notes", [op("create", "a")]).status == 200)
            _ = try await alice.changes("Notes")
            _ = try await alice.changes("NoSuchZone")
            let scrape = try await MetricsScrape.of(server.server.baseURL)
            let lines = scrape.text.split(separator: "\n").map(String.init)
            let types = lines.indices.filter { lines[$0].hasPrefix("# TYPE ") }
            #expect(types.count >= 10, "\(scrape.text)")
            for index in types {
                let name = lines[index].split(separator: " ")[2]
                #expect(index > 0 && lines[index - 1].hasPrefix("# HELP \(name) "), "no help for \(name)")
                #expect((index > 0 ? lines[index - 1] : "").count > "# HELP \(name) ".count + 10)
            }
            #expect(lines.filter { $0.hasPrefix("# HELP ") }.count == types.count, "one help line each")
            #expect(MetricsScrape.parse(scrape.text)[#"nimbus_records_written_total{kind="saved"}"#] == 1)
        }
    }

    @Test func eachServerCountsOnlyItsOwnRequests() async throws {
        try await TestServer.with { first in
            try await TestServer.with { second in
                let alice = try await first.user("alice")
                let before = try await MetricsScrape.of(second.server.baseURL)
                for _ in 0..<3 { #expect(try await alice.get("users/current").status == 200) }
                let firstAfter = try await MetricsScrape.of(first.server.baseURL)
                let secondAfter = try await MetricsScrape.of(second.server.baseURL)
                #expect(firstAfter[Self.requests("users/current", 200)] == 3)
                #expect(secondAfter.delta(Self.requests("users/current", 200), since: before) == 0)
            }
        }
    }

    @Test func aMetricsTokenIsRequiredWhenConfigured() async throws {
        try await TestServer.with(configure: { $0.metrics.bearerToken = "scrape-s3cret" }) { server in
            let none = try await MetricsScrape.of(server.server.baseURL)
            #expect(none.status == 401)
            #expect(none.headers.first(name: "WWW-Authenticate")?.hasPrefix("Bearer") == true)
            #expect(!none.text.contains("nimbus_"))
            let wrong = try await MetricsScrape.of(server.server.baseURL, authorization: "Bearer scrape-s3cre")
            #expect(wrong.status == 401)
            let basic = try await MetricsScrape.of(server.server.baseURL, authorization: "Basic scrape-s3cret")
            #expect(basic.status == 401)
            let right = try await MetricsScrape.of(server.server.baseURL, authorization: "Bearer scrape-s3cret")
            #expect(right.status == 200)
            #expect(right[Self.requests("metrics", 401)] == 3)
        }
    }

    @Test func withMetricsOffThereIsNoEndpoint() async throws {
        try await TestServer.with(configure: { $0.metrics.enabled = false }) { server in
            let alice = try await server.user("alice")
            #expect(try await alice.get("users/current").status == 200)
            let scrape = try await MetricsScrape.of(server.server.baseURL)
            #expect(scrape.status == 404)
            #expect(!scrape.text.contains("nimbus_"))
        }
    }

    @Test(arguments: Engine.available) func notificationsAndPushConnectionsAreCounted(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("ReadingList")
            #expect(try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList")).status == 200)
            let phoneA = try await PushTestDevice.connect(alice, deviceID: "alice-A")
            let phoneB = try await PushTestDevice.connect(alice, deviceID: "alice-B")
            let before = try await MetricsScrape.of(server.server.baseURL)
            #expect(before["nimbus_push_connections"] == 2)

            let saved = try await alice.onDevice("alice-A").modify("ReadingList", [op("create", "article-1", "Bookmark")])
            #expect(saved.status == 200)
            _ = try await phoneB.next()
            let after = try await MetricsScrape.of(server.server.baseURL)
            #expect(after.delta("nimbus_notifications_created_total", since: before) == 1)
            #expect(after.delta("nimbus_notifications_pushed_total", since: before) == 1, "B only: A made the change")
            #expect(after["nimbus_push_queue_frames"] >= 0)

            await phoneA.disconnect()
            await server.server.push.waitForConnectedDevices(1, of: .init(
                container: TestServer.container, environment: .development, userRecordName: alice.userRecordName!))
            #expect(try await MetricsScrape.of(server.server.baseURL)["nimbus_push_connections"] == 1)
            await phoneB.disconnect()
        }
    }

    @Test(arguments: Engine.available) func assetBytesAreCountedBothWays(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bytes = testBytes(70_000)
            let before = try await MetricsScrape.of(server.server.baseURL)
            let singleFile = try await alice.uploadAsset(bytes, record: "p1", field: "image")
            let saved = try await alice.modify("_defaultZone", [assetOp("create", "p1", ["image": (singleFile, "ASSETID")])])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            let looked = try await alice.lookup("p1")
            let url = try #require(looked.records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
            let fetched = try await alice.transfer(url.replacingOccurrences(of: "${f}", with: "a.bin"), method: .GET)
            #expect(fetched.bytes == bytes)
            let ranged = try await alice.transfer(
                url.replacingOccurrences(of: "${f}", with: "a.bin"), method: .GET, headers: [("Range", "bytes=0-99")])
            #expect(ranged.status == 206)
            let after = try await MetricsScrape.of(server.server.baseURL)
            #expect(after.delta(#"nimbus_asset_bytes_total{direction="upload"}"#, since: before) == 70_000)
            #expect(after.delta(#"nimbus_asset_bytes_total{direction="download"}"#, since: before) == 70_100)
            #expect(after.delta(Self.requests("assets/download", 200), since: before) == 1)
            #expect(after.delta(Self.requests("assets/download", 206), since: before) == 1)
        }
    }
}
