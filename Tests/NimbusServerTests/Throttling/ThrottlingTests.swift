import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Request throttling through the HTTP API: token buckets per user, per API token and per
/// address, each container environment's own limits, THROTTLED answers in CloudKit's shape.
/// The server's clock is a ``ManualWallClock``: buckets refill when the test says.
@Suite struct ThrottlingTests {
    static let start: Int64 = 1_800_000_000_000

    static func withServer(
        _ engine: Engine = .sqlite, throttle configure: (inout ThrottleSettings) -> Void,
        _ body: (TestServer, ManualWallClock) async throws -> Void
    ) async throws {
        let clock = ManualWallClock(millis: start)
        try await TestServer.with(
            engine,
            configure: {
                $0.clock = clock.wallClock
                configure(&$0.throttle)
            }
        ) { server in try await body(server, clock) }
    }

    /// GET `zones/list` as `client`, with the response's headers.
    static func listZones(_ client: TestClient) async throws -> (reply: TestClient.Reply, retryAfter: String?) {
        var request = HTTPClientRequest(url: client.url("private", "zones/list"))
        request.method = .GET
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let buffer = try await response.body.collect(upTo: 1 << 20)
        let json = (try? JSON.parse(Array(buffer.readableBytesView))) ?? .null
        return (
            TestClient.Reply(status: Int(response.status.code), json: json, text: String(buffer: buffer)),
            response.headers.first(name: "Retry-After")
        )
    }

    @Test(arguments: Engine.available)
    func overItsRateAUserGets429WithRetryAfterInBodyAndHeader(engine: Engine) async throws {
        try await Self.withServer(engine, throttle: {
            $0.defaults.userRate = 0.5  // one request every 2 s
            $0.defaults.userBurst = 2
        }) { server, clock in
            let alice = try await server.user("alice")
            #expect(try await Self.listZones(alice).reply.status == 200)
            #expect(try await Self.listZones(alice).reply.status == 200)
            let (refused, header) = try await Self.listZones(alice)
            #expect(refused.status == 429)
            #expect(refused.serverErrorCode == "THROTTLED")
            #expect(refused["retryAfter"]?.int64 == 2, "\(refused.text)")
            #expect(header == "2")
            let reason = refused["reason"]?.string ?? ""
            #expect(reason.contains("this user") && reason.contains("--user-rate") && reason.contains("retry"), "\(reason)")

            clock.advance(by: .seconds(1))  // half a token: still refused, for the second left
            #expect(try await Self.listZones(alice).reply["retryAfter"]?.int64 == 1)
            clock.advance(by: .seconds(1))
            #expect(try await Self.listZones(alice).reply.status == 200)
        }
    }

    @Test func oneUserThrottledLeavesAnotherUserAlone() async throws {
        try await Self.withServer(throttle: {
            $0.defaults.userRate = 1
            $0.defaults.userBurst = 3
        }) { server, _ in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            for _ in 0..<3 { #expect(try await Self.listZones(alice).reply.status == 200) }
            for _ in 0..<5 { #expect(try await Self.listZones(alice).reply.serverErrorCode == "THROTTLED") }
            for _ in 0..<3 { #expect(try await Self.listZones(bob).reply.status == 200) }
        }
    }

    @Test func theAPITokenHasItsOwnBucketAcrossUsers() async throws {
        try await Self.withServer(throttle: {
            $0.defaults.tokenRate = 1
            $0.defaults.tokenBurst = 4
        }) { server, _ in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            for _ in 0..<2 {
                #expect(try await Self.listZones(alice).reply.status == 200)
                #expect(try await Self.listZones(bob).reply.status == 200)
            }
            let refused = try await Self.listZones(bob).reply
            #expect(refused.serverErrorCode == "THROTTLED")
            #expect(refused["reason"]?.string?.contains("API token") == true, "\(refused.text)")
        }
    }

    @Test func theAddressLimitAppliesBeforeAuthentication() async throws {
        try await Self.withServer(throttle: {
            $0.defaults.addressRate = 1
            $0.defaults.addressBurst = 2
        }) { server, clock in
            var stranger = server.anonymous()
            stranger.apiToken = "not-a-token"
            // Within the address's burst the bad token is refused as such ...
            #expect(try await Self.listZones(stranger).reply.serverErrorCode == "AUTHENTICATION_FAILED")
            #expect(try await Self.listZones(stranger).reply.serverErrorCode == "AUTHENTICATION_FAILED")
            // ... past it, before the token is even looked at; a good client from there too.
            let refused = try await Self.listZones(stranger)
            #expect(refused.reply.status == 429)
            #expect(refused.reply["reason"]?.string?.contains("client address") == true)
            #expect(refused.retryAfter == "1")
            let alice = try await server.user("alice")
            #expect(try await Self.listZones(alice).reply.serverErrorCode == "THROTTLED")
            clock.advance(by: .seconds(1))
            #expect(try await Self.listZones(alice).reply.status == 200)
        }
    }

    @Test func turnedOffNothingIsThrottled() async throws {
        try await Self.withServer(throttle: {
            $0.enabled = false
            $0.defaults.userRate = 1
            $0.defaults.userBurst = 1
            $0.defaults.addressRate = 1
            $0.defaults.addressBurst = 1
        }) { server, _ in
            let alice = try await server.user("alice")
            for _ in 0..<5 { #expect(try await Self.listZones(alice).reply.status == 200) }
        }
    }

    @Test(arguments: Engine.available)
    func aContainersOwnLimitsApplyWithoutARestart(engine: Engine) async throws {
        try await Self.withServer(engine, throttle: { _ in }) { server, clock in
            let store = server.server.store
            let container = TestServer.container
            #expect(try await store.throttleLimits(container: container, environment: .development).isEmpty)
            let alice = try await server.user("alice")
            for _ in 0..<3 { #expect(try await Self.listZones(alice).reply.status == 200) }

            // What `nimbus container throttle … --env development --user-rate 1 --user-burst 1` stores.
            let tight = ThrottleLimits(userRate: 1, userBurst: 1)
            try await store.setThrottleLimits(tight, container: container, environment: .development)
            #expect(try await store.throttleLimits(container: container, environment: .development) == tight)
            #expect(try await store.throttleLimits(container: container, environment: .production).isEmpty)
            clock.advance(by: ThrottleSettings().settingsRefresh)  // the node reads the settings again
            #expect(try await Self.listZones(alice).reply.status == 200)
            #expect(try await Self.listZones(alice).reply.serverErrorCode == "THROTTLED")
            var production = alice
            production.environment = "production"
            #expect(try await Self.listZones(production).reply.status == 200, "the other environment keeps the defaults")

            // --reset: the server's defaults again.
            try await store.setThrottleLimits(ThrottleLimits(), container: container, environment: .development)
            #expect(try await store.throttleLimits(container: container, environment: .development).isEmpty)
            clock.advance(by: ThrottleSettings().settingsRefresh)
            for _ in 0..<3 { #expect(try await Self.listZones(alice).reply.status == 200) }

            // Bad input: a clear error, nothing stored.
            await #expect(throws: AccountError.self) {
                try await store.setThrottleLimits(ThrottleLimits(userBurst: 0), container: container, environment: .development)
            }
            await #expect(throws: AccountError.self) {
                try await store.setThrottleLimits(ThrottleLimits(userRate: -1), container: container, environment: .development)
            }
            await #expect(throws: AccountError.self) {
                try await store.setThrottleLimits(tight, container: "iCloud.no.such", environment: .development)
            }
            #expect(try await store.throttleLimits(container: container, environment: .development).isEmpty)
        }
    }

    @Test func assetTransfersAreThrottledByAddress() async throws {
        try await Self.withServer(throttle: {
            $0.defaults.addressRate = 1
            $0.defaults.addressBurst = 1
        }) { server, _ in
            let url = "\(server.server.baseURL)/assets/1/download/nothing/file"
            let client = server.anonymous()
            #expect(try await client.send(url, method: .GET, body: nil, headers: []).status != 429)
            let refused = try await client.send(url, method: .GET, body: nil, headers: [])
            #expect(refused.status == 429)
            #expect(refused.serverErrorCode == "THROTTLED")
        }
    }

    /// Alice sends `requests` 10-record modifies at once to `zone`, round after round, until
    /// `done` holds of the metrics or `rounds` have passed; every one must succeed. Returns the
    /// record names written.
    static func floodRounds(
        _ alice: TestClient, zone: String, prefix: String, server: TestServer, requests: Int = 8, rounds: Int,
        until done: (MetricsScrape) -> Bool
    ) async throws -> [String] {
        var names: [String] = []
        for round in 0..<rounds {
            let replies = try await withThrowingTaskGroup(of: TestClient.Reply.self) { group in
                for request in 0..<requests {
                    let operations = (0..<10).map { op("create", "\(prefix)\(round)-\(request)-\($0)", fields: ["n": .int($0)]) }
                    group.addTask { try await alice.modify(zone, operations) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for reply in replies {
                #expect(reply.status == 200, "\(reply.text)")
                #expect(reply.records.count == 10 && reply.records.allSatisfy { $0["serverErrorCode"] == nil }, "\(reply.text)")
            }
            names += replies.flatMap { $0.records.compactMap { $0["recordName"]?.string } }
            if done(try await MetricsScrape.of(server.server.baseURL)) { break }
        }
        return names
    }

    static let backgroundSeries = "nimbus_throttle_background_requests_total"

    /// Alone, a user's requests beyond its cap wait and run as usual; beside another user, the
    /// ones that waited run in the background lane (counted in `/metrics`) and still answer
    /// in full. The clock stands still, so Bob, once seen, stays within the contention window.
    @Test func besideAnotherUserAFloodsWaitingRequestsRunInTheBackgroundLane() async throws {
        // Batches of 10 in the lane commit in parts of at most 3 records (4 transactions each).
        try await Self.withServer(throttle: {
            $0.userInFlight = 2
            $0.backgroundTransactionRecords = 3
        }) { server, _ in
            let alice = try await server.user("alice")
            #expect(try await alice.createZone("Notes").status == 200)
            // Alone: 8 at once against a cap of 2, so some wait; none goes to the lane.
            let alone = try await Self.floodRounds(alice, zone: "Notes", prefix: "alone", server: server, rounds: 3) { _ in false }
            #expect(try await MetricsScrape.of(server.server.baseURL)[Self.backgroundSeries] == 0)

            let bob = try await server.user("bob")
            #expect(try await Self.listZones(bob).reply.status == 200)
            let beside = try await Self.floodRounds(alice, zone: "Notes", prefix: "beside", server: server, rounds: 50) {
                $0[Self.backgroundSeries] > 0
            }
            #expect(try await MetricsScrape.of(server.server.baseURL)[Self.backgroundSeries] > 0)
            // Everything each request answered is stored, batches committed in parts included.
            var stored: Set<String> = []
            var token: String?
            repeat {
                let page = try await alice.changes("Notes", since: token)
                stored.formUnion(page.records.compactMap { $0["recordName"]?.string })
                token = page["syncToken"]?.string
                if page["moreComing"]?.bool != true { break }
            } while true
            #expect(stored == Set(alone + beside))
            #expect(alone.count == 3 * 8 * 10 && beside.count % 80 == 0 && !beside.isEmpty)
        }
    }

    @Test func withTheLaneOffAFloodBesideOthersRunsAsUsual() async throws {
        try await Self.withServer(throttle: {
            $0.userInFlight = 2
            $0.backgroundLane = false
        }) { server, _ in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            #expect(try await alice.createZone("Notes").status == 200)
            #expect(try await Self.listZones(bob).reply.status == 200)
            _ = try await Self.floodRounds(alice, zone: "Notes", prefix: "r", server: server, rounds: 3) { _ in false }
            #expect(try await MetricsScrape.of(server.server.baseURL)[Self.backgroundSeries] == 0)
        }
    }
}
