import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
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
        #expect(registered.json == ["apnsEnvironment": "development", "apnsToken": .string(token)])
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

    @Test(arguments: Engine.available) func unknownAndUnregisteredTokensAreRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let created = try await post(alice, tokensURL(alice, "create"), [:])
            let courier = try #require(created["webcourierURL"]?.string)
            let unregistered = try await alice.send(courier, method: .GET, body: nil, headers: [])
            #expect(unregistered.serverErrorCode == "BAD_REQUEST")
            let unknown = try await alice.send("\(alice.baseURL)/webcourier/nope", method: .GET, body: nil, headers: [])
            #expect(unknown.status == 404)

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
}
