import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `tokens/create`, `tokens/register` and the long-polled `webcourierURL`, for web clients.
@Suite("Web courier")
struct WebCourierTests {
    /// `/database/1/{container}/{environment}/tokens/…`: no database segment, as in CloudKit.
    func tokensURL(_ client: TestClient, _ operation: String) -> String {
        "\(client.baseURL)/database/1/\(client.container)/\(client.environment)/tokens/\(operation)"
            + "?ckAPIToken=\(client.apiToken!)&ckWebAuthToken=\(client.webAuthToken!)"
    }

    func post(_ client: TestClient, _ url: String, _ body: JSON) async throws -> TestClient.Reply {
        try await client.send(url, method: .POST, body: body.serializedBytes(), headers: [])
    }

    /// Creates and registers a token; returns (token, courier URL).
    func register(_ client: TestClient) async throws -> (String, String) {
        let created = try await post(client, tokensURL(client, "create"), ["apnsEnvironment": "development"])
        #expect(created.status == 200)
        #expect(created["apnsEnvironment"] == "development")
        let token = try #require(created["apnsToken"]?.string)
        let courier = try #require(created["webcourierURL"]?.string)
        #expect(courier.hasPrefix(client.baseURL))
        let registered = try await post(
            client, tokensURL(client, "register"), ["apnsEnvironment": "development", "apnsToken": .string(token)])
        #expect(
            registered.json == ["apnsEnvironment": "development", "apnsToken": .string(token), "webcourierURL": .string(courier)])
        return (token, courier)
    }

    /// The poll outlasts any delay of the change under load: with the default 30 s, a modify
    /// slowed past it by the full suite on 2 cores made the first poll time out empty (and
    /// the second get both changes), which looked like a lost wake-up and was not one.
    @Test(arguments: Engine.available) func aLongPollReturnsThePushWhenTheChangeIsCommitted(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.push.courierTimeout = .seconds(240) }) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("ReadingList")
            _ = try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList"))
            let (token, courier) = try await register(alice)

            // The poll waits; the change wakes it.
            async let polled = alice.send(courier, method: .GET, body: nil, headers: [], timeout: .seconds(300))
            _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "a", "Bookmark")])
            let push = try await polled
            #expect(push.status == 200)
            #expect(push["ck"]?["fet"]?["zid"] == "ReadingList")
            #expect(push["aps"]?["content-available"] == 1)

            // A change made while nobody polls is waiting for the next poll.
            _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "b", "Bookmark")])
            let waiting = try await alice.send(courier, method: .GET, body: nil, headers: [])
            #expect(waiting["ck"]?["fet"] != nil)
            #expect(waiting["nimbus"] == nil)
            #expect(waiting["ck"]?["nid"] != push["ck"]?["nid"])

            // The web client's own change (token as device ID) is not sent back to it; others are.
            _ = try await alice.onDevice(token).modify("ReadingList", [op("create", "c", "Bookmark")])
            _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "d", "Bookmark")])
            _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "e", "Bookmark")])
            let coalesced = try await alice.send(courier, method: .GET, body: nil, headers: [])
            #expect(coalesced["nimbus"]?["coalesced"] == 2)
            let last = try await alice.allNotifications().last
            #expect(coalesced["ck"]?["nid"] == last?["notificationID"])
        }
    }

    @Test(arguments: Engine.available) func aPollWithNothingToSayReturnsEmptyAfterTheTimeout(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.push.courierTimeout = .milliseconds(200) }) { server in
            let alice = try await server.user("alice")
            let (_, courier) = try await register(alice)
            let reply = try await alice.send(courier, method: .GET, body: nil, headers: [])
            #expect(reply.status == 200)
            #expect(reply.text.isEmpty)
        }
    }

    @Test(arguments: Engine.available) func unknownTokensAndOtherUsersAreRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let created = try await post(alice, tokensURL(alice, "create"), [:])
            let unknown = try await alice.send("\(alice.baseURL)/webcourier/nope", method: .GET, body: nil, headers: [])
            #expect(unknown.status == 404)
            #expect(unknown.serverErrorCode == "NOT_FOUND")

            let badEnvironment = try await post(alice, tokensURL(alice, "create"), ["apnsEnvironment": "staging"])
            #expect(badEnvironment.serverErrorCode == "BAD_REQUEST")
            // Tokens belong to a user.
            let anonymous = server.anonymous()
            let url = "\(alice.baseURL)/database/1/\(alice.container)/development/tokens/create?ckAPIToken=\(alice.apiToken!)"
            #expect(try await post(anonymous, url, [:]).serverErrorCode == "AUTHENTICATION_REQUIRED")
            // Bob cannot register Alice's token.
            let bob = try await server.user("bob")
            let token = try #require(created["apnsToken"]?.string)
            let stolen = try await post(
                bob, tokensURL(bob, "register"), ["apnsEnvironment": "development", "apnsToken": .string(token)])
            #expect(stolen.serverErrorCode == "ACCESS_DENIED")
        }
    }

    /// A token is the credential of its courier URL: one the client made up (guessable, or
    /// chosen) is never registered, so it never becomes one.
    @Test(arguments: Engine.available) func onlyATokenIssuedToTheUserCanBeRegistered(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("ReadingList")
            _ = try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList"))
            for madeUp in ["0000", "guessable-token", String(repeating: "a", count: 48)] {
                let refused = try await post(
                    alice, tokensURL(alice, "register"), ["apnsEnvironment": "development", "apnsToken": .string(madeUp)])
                #expect(refused.serverErrorCode == "BAD_REQUEST")
                #expect(refused["reason"]?.string?.contains("tokens/create") == true)
                // Its courier URL is no credential: nothing is delivered there.
                _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "r-\(madeUp)", "Bookmark")])
                let courier = try await alice.send("\(alice.baseURL)/webcourier/\(madeUp)", method: .GET, body: nil, headers: [])
                #expect(courier.status == 404)
            }
            // An issued token registers and its courier delivers.
            let (_, courier) = try await register(alice)
            _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "b", "Bookmark")])
            let push = try await alice.send(courier, method: .GET, body: nil, headers: [])
            #expect(push["ck"]?["fet"]?["zid"] == "ReadingList")
        }
    }

    /// The `/device/1/…/tokens/create` URL CloudKit JS sends, with its `ckjs…` parameters.
    func deviceURL(_ client: TestClient, _ operation: String) -> String {
        "\(client.baseURL)/device/1/\(client.container)/\(client.environment)/tokens/\(operation)"
            + "?ckjsBuildVersion=2604ProjectDev34&ckjsVersion=2.6.4&clientId=web-1"
            + "&ckAPIToken=\(client.apiToken!)&ckWebAuthToken=\(client.webAuthToken!)"
    }

    /// CloudKit JS's `registerForNotifications()`: `tokens/create` under `/device/1/`, then a
    /// long poll of `webcourierURL` at once, with no `tokens/register` in between.
    @Test(arguments: Engine.available) func cloudKitJSCreatesUnderDeviceAndPollsStraightAway(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.push.courierTimeout = .milliseconds(200) }) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("ReadingList")
            _ = try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList"))
            let created = try await post(alice, deviceURL(alice, "create"), ["apnsEnvironment": "production"])
            #expect(created.status == 200, "\(created.text)")
            #expect(created["apnsEnvironment"] == "production")
            let token = try #require(created["apnsToken"]?.string)
            let courier = try #require(created["webcourierURL"]?.string)
            #expect(courier == "\(alice.baseURL)/webcourier/\(token)")

            // The first poll registers the token (then times out empty: nothing happened yet);
            // a change committed after it waits for the next poll, which answers at once.
            let first = try await alice.send(courier, method: .GET, body: nil, headers: [])
            #expect(first.status == 200, "\(first.text)")
            #expect(first.text.isEmpty, "nothing happened before the poll: \(first.text)")
            _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "a", "Bookmark")])
            let push = try await alice.send(courier, method: .GET, body: nil, headers: [])
            #expect(push.status == 200, "\(push.text)")
            #expect(push["ck"]?["fet"]?["zid"] == "ReadingList")

            // tokens/register under /device/1/ answers the courier URL as well.
            let registered = try await post(
                alice, deviceURL(alice, "register"), ["apnsEnvironment": "production", "apnsToken": .string(token)])
            #expect(registered["webcourierURL"]?.string == courier, "\(registered.text)")

            // /device/1/ serves the push-token operations only, in their database-less form.
            for path in ["records/query", "public/tokens/create", "users/current"] {
                let url = "\(alice.baseURL)/device/1/\(alice.container)/development/\(path)?ckAPIToken=\(alice.apiToken!)"
                let reply = try await post(alice, url, [:])
                #expect(reply.status == 404, "\(path): \(reply.text)")
                #expect(reply.serverErrorCode == "NOT_FOUND")
            }
        }
    }

    /// A poll's error is held for the refusal pause: CloudKit JS polls again 10 ms after an
    /// error, so without it a stale token would cost the server a hundred requests a second.
    @Test(arguments: Engine.available) func aRefusedPollIsAnsweredAfterThePauseSoALoopCannotBusyTheServer(engine: Engine)
        async throws
    {
        let pause = Duration.seconds(1)  // WebCourier.refusalPause
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let clock = ContinuousClock()
            let started = clock.now
            for attempt in 0..<3 {
                let reply = try await alice.send("\(alice.baseURL)/webcourier/stale-\(attempt)", method: .GET, body: nil, headers: [])
                #expect(reply.status == 404)
                #expect(reply.serverErrorCode == "NOT_FOUND")
            }
            #expect(clock.now - started >= pause * 3, "three refusals in a row take at least three pauses")
            let tooLong = try await alice.send(
                "\(alice.baseURL)/webcourier/\(String(repeating: "f", count: 4000))", method: .GET, body: nil, headers: [])
            #expect(tooLong.serverErrorCode == "NOT_FOUND")
        }
    }
}
