import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// Provisioning through the storage protocol: containers, users, tokens and keys, stamped by
/// the store's injected clock.
@Suite("Store: accounts")
struct AccountStoreTests {
    typealias F = Fixture

    @Test(arguments: Engine.available)
    func tokensAreIssuedAtTheStoresClockAndWorkUntilRevoked(engine: Engine) async throws {
        let clock = ManualWallClock(millis: F.past)
        try await engine.withStore(clock: clock.wallClock) { store in
            let api = try await store.createContainer(F.container)
            #expect(api.createdAt == F.past)
            #expect(api.kind == .api)
            clock.advance(by: .seconds(10))
            let web = try await store.createUser(
                name: "alice", email: "Alice@Example.com", firstName: "Alice", lastName: nil, container: F.container)
            #expect(web.createdAt == F.past + 10_000)
            let user = try #require(web.user)
            #expect(user.recordName.hasPrefix("_"))

            #expect(try await store.container(forAPIToken: api.token) == F.container)
            #expect(try await store.user(forWebAuthToken: web.token) == user)
            let sessionID = try #require(web.sessionID)
            #expect(
                try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token)
                    == TokenLookup(
                        container: F.container, user: user, session: SessionStamp(id: sessionID, lastSeenAt: F.past + 10_000)))
            #expect(try await store.user(recordName: user.recordName, container: F.container) == user)

            #expect(try await store.revokeToken(web.token))
            #expect(try await !store.revokeToken(web.token), "a token is revoked once")
            #expect(try await !store.revokeToken("never-issued"))
            #expect(try await store.user(forWebAuthToken: web.token) == nil)
            #expect(
                try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token)
                    == TokenLookup(container: F.container, user: nil))
            let listed = try await store.listTokens(container: F.container)
            #expect(listed.map(\.token) == [api.token, sessionID], "in order of issue; a session by its ID")
            #expect(listed.map(\.revoked) == [false, true])
            #expect(listed.map(\.createdAt) == [F.past, F.past + 10_000])
        }
    }

    @Test(arguments: Engine.available)
    func containersAreCreatedOnceAndUsersNeedOne(engine: Engine) async throws {
        try await engine.withStore { store in
            _ = try await store.createContainer(F.container)
            await #expect(throws: AccountError.self) { try await store.createContainer(F.container) }
            await #expect(throws: AccountError.self) { try await store.createContainer("not a container!") }
            await #expect(throws: AccountError.self) {
                try await store.createUser(name: "alice", email: nil, firstName: nil, lastName: nil, container: "iCloud.none")
            }
            await #expect(throws: AccountError.self) { try await store.createAPIToken(container: "iCloud.none") }
            #expect(try await store.listContainers() == [F.container])

            let other = "iCloud.com.example.other"
            _ = try await store.createContainer(other)
            let here = try #require(
                try await store.createUser(name: "alice", email: nil, firstName: nil, lastName: nil, container: F.container).user)
            let there = try #require(
                try await store.createUser(name: "alice", email: nil, firstName: nil, lastName: nil, container: other).user)
            #expect(here.recordName != there.recordName, "a user's record name differs in each container")
            let again = try await store.createUser(name: "alice", email: nil, firstName: nil, lastName: nil, container: F.container)
            #expect(again.user?.recordName == here.recordName, "signing in again keeps the record name")
        }
    }

    @Test(arguments: Engine.available)
    func serverKeysAreStampedByTheClockAndRevocable(engine: Engine) async throws {
        let clock = ManualWallClock(millis: F.past)
        try await engine.withStore(clock: clock.wallClock) { store in
            _ = try await store.createContainer(F.container)
            clock.advance(by: .seconds(1))
            try await store.addServerKey(keyID: "k1", container: F.container, publicKeyPEM: "PEM")
            let key = try #require(try await store.serverKey(id: "k1"))
            #expect(key == ServerKey(keyID: "k1", container: F.container, publicKeyPEM: "PEM", createdAt: F.past + 1_000, revoked: false))
            await #expect(throws: AccountError.serverKeyExists("k1")) {
                try await store.addServerKey(keyID: "k1", container: F.container, publicKeyPEM: "PEM")
            }
            #expect(try await store.revokeServerKey(keyID: "k1"))
            #expect(try await !store.revokeServerKey(keyID: "k1"))
            #expect(try await store.serverKey(id: "k1") == nil)
            #expect(try await store.listServerKeys(container: F.container).map(\.revoked) == [true])
        }
    }

    @Test(arguments: Engine.available)
    func onlyUsersWhoOptedInAreDiscoverable(engine: Engine) async throws {
        try await engine.withStore { store in
            _ = try await store.createContainer(F.container)
            let alice = try #require(
                try await store.createUser(name: "alice", email: "Alice@Example.com", firstName: nil, lastName: nil, container: F.container).user)
            let bob = try #require(
                try await store.createUser(name: "bob", email: "bob@example.com", firstName: nil, lastName: nil, container: F.container).user)
            let none = try await store.discoverableUsers(
                emailAddresses: ["alice@example.com", "bob@example.com"], recordNames: [], container: F.container)
            #expect(none.isEmpty, "new identities are not discoverable")
            _ = try await store.setDiscoverable(true, userName: "alice", container: F.container)
            let found = try await store.discoverableUsers(
                emailAddresses: ["ALICE@example.com", "bob@example.com"], recordNames: [bob.recordName], container: F.container)
            #expect(found == [alice], "matched ignoring ASCII case; Bob did not opt in")
            await #expect(throws: AccountError.self) {
                try await store.setDiscoverable(true, userName: "carol", container: F.container)
            }
        }
    }
}
