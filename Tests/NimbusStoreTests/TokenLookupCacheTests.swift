import Foundation
import NimbusProtocol
import Testing

@testable import NimbusStore

/// The SQLite store answers a request's token lookup from memory while the answer is fresh:
/// a change through the store ends every answer at once, one made by another process on the
/// same file is seen when the answer expires, and an answer read before a change is never
/// kept after it.
@Suite("Token lookups from memory")
struct TokenLookupCacheTests {
    typealias F = Fixture

    static let found = TokenLookup(container: F.container, user: nil)

    @Test func anAnswerIsServedUntilItExpires() {
        let cache = TokenLookupCache()
        cache.store(Self.found, apiToken: "a", webAuthToken: nil, generation: cache.generation, now: 100)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 100) == Self.found)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 100 + TokenLookupCache.lifetimeMillis - 1) == Self.found)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 100 + TokenLookupCache.lifetimeMillis) == nil)
        #expect(cache.lookup(apiToken: "a", webAuthToken: "w", now: 100) == nil, "another pair of tokens")
    }

    @Test func anAnswerReadBeforeAChangeIsNotKept() {
        let cache = TokenLookupCache()
        let before = cache.generation
        cache.invalidate()
        cache.store(Self.found, apiToken: "a", webAuthToken: nil, generation: before, now: 0)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 0) == nil)

        cache.store(Self.found, apiToken: "a", webAuthToken: nil, generation: cache.generation, now: 0)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 0) == Self.found)
        cache.invalidate()
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 0) == nil, "a change ends the answers kept")
    }

    @Test func unknownTokensAreNeverKept() {
        let cache = TokenLookupCache()
        let generation = cache.generation
        cache.store(TokenLookup(container: nil, user: nil), apiToken: "guess", webAuthToken: nil, generation: generation, now: 0)
        cache.store(Self.found, apiToken: "a", webAuthToken: "unknown", generation: generation, now: 0)
        #expect(cache.lookup(apiToken: "guess", webAuthToken: nil, now: 0) == nil)
        #expect(cache.lookup(apiToken: "a", webAuthToken: "unknown", now: 0) == nil)
    }

    @Test func aFullCacheStartsOver() {
        let cache = TokenLookupCache()
        for index in 0..<TokenLookupCache.capacity {
            cache.store(Self.found, apiToken: "t\(index)", webAuthToken: nil, generation: cache.generation, now: 0)
        }
        #expect(cache.lookup(apiToken: "t0", webAuthToken: nil, now: 0) == Self.found)
        cache.store(Self.found, apiToken: "one more", webAuthToken: nil, generation: cache.generation, now: 0)
        #expect(cache.lookup(apiToken: "t0", webAuthToken: nil, now: 0) == nil)
        #expect(cache.lookup(apiToken: "one more", webAuthToken: nil, now: 0) == Self.found)
    }

    /// A store, and a second one on the same file as another process (the CLI) opens it.
    static func withTwoStores(
        clock: ManualWallClock, _ body: (SQLiteStore, SQLiteStore) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-token-cache-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try SQLiteStore(directory: directory, clock: clock.wallClock)
        let other = try SQLiteStore(directory: directory, clock: clock.wallClock)
        defer {
            try? other.close()
            try? server.close()
        }
        try await body(server, other)
    }

    @Test func aRevocationThroughTheStoreIsSeenAtOnce() async throws {
        try await Self.withTwoStores(clock: ManualWallClock(millis: F.past)) { store, _ in
            let api = try await store.createContainer(F.container)
            let web = try await store.createUser(name: "alice", email: nil, firstName: nil, lastName: nil, container: F.container)
            let found = try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token)
            #expect(found.user == web.user)
            #expect(try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token) == found)

            #expect(try await store.revokeToken(web.token))
            #expect(try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token).user == nil)
            #expect(try await store.revokeToken(api.token))
            #expect(try await store.lookUpTokens(apiToken: api.token, webAuthToken: nil).container == nil)
        }
    }

    @Test func aRevocationByAnotherProcessIsSeenWhenTheAnswerExpires() async throws {
        let clock = ManualWallClock(millis: F.past)
        try await Self.withTwoStores(clock: clock) { store, other in
            let api = try await store.createContainer(F.container)
            let web = try await store.createUser(name: "alice", email: nil, firstName: nil, lastName: nil, container: F.container)
            #expect(try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token).user == web.user)

            #expect(try await other.revokeToken(web.token))
            // Kept from before: this store did not see the other's commit.
            #expect(try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token).user == web.user)
            clock.advance(by: .milliseconds(TokenLookupCache.lifetimeMillis))
            #expect(try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token).user == nil)
        }
    }

    @Test func aChangeToAnotherTableKeepsTheAnswers() async throws {
        try await Self.withTwoStores(clock: ManualWallClock(millis: F.past)) { store, _ in
            let api = try await store.createContainer(F.container)
            _ = try await store.lookUpTokens(apiToken: api.token, webAuthToken: nil)
            let generation = store.tokenLookups.generation
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            #expect(store.tokenLookups.generation == generation, "a zone is not a table a lookup reads")
            _ = try await store.createAPIToken(container: F.container)
            #expect(store.tokenLookups.generation != generation)
        }
    }
}
