import Foundation
import GRDB
import NimbusProtocol
import Testing

@testable import NimbusSQLite
@testable import NimbusStore

/// The SQLite store answers a request's token lookup from memory while the answer is fresh:
/// a change through the store ends every answer at once, one made by another process on the
/// same file is seen when the answer expires, and an answer read before a change is never
/// kept after it.
@Suite("Token lookups from memory")
struct TokenLookupCacheTests {
    typealias F = Fixture

    static let found = TokenLookup(container: F.container, user: nil)
    static let signedIn = TokenLookup(
        container: F.container,
        user: UserIdentity(name: "alice", recordName: "_alice", container: F.container, email: nil, firstName: nil, lastName: nil))

    @Test func anAnswerIsServedUntilItExpires() {
        let cache = TokenLookupCache()
        cache.store(Self.found, rows: [], apiToken: "a", webAuthToken: nil, generation: cache.generation, now: 100)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 100) == Self.found)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 100 + TokenLookupCache.lifetimeMillis - 1) == Self.found)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 100 + TokenLookupCache.lifetimeMillis) == nil)
        #expect(cache.lookup(apiToken: "a", webAuthToken: "w", now: 100) == nil, "another pair of tokens")
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 99) == nil, "a clock set back")
    }

    @Test func anAnswerReadBeforeAChangeIsNotKept() {
        let cache = TokenLookupCache()
        let before = cache.generation
        cache.invalidate(rows: [TokenLookupCache.Row(table: "sessions", rowID: 99)])
        cache.store(Self.found, rows: [], apiToken: "a", webAuthToken: nil, generation: before, now: 0)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 0) == nil, "any change since the read began")

        cache.store(Self.found, rows: [], apiToken: "a", webAuthToken: nil, generation: cache.generation, now: 0)
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 0) == Self.found)
        cache.invalidateAll()
        #expect(cache.lookup(apiToken: "a", webAuthToken: nil, now: 0) == nil, "an insert ends every answer kept")
    }

    @Test func aChangedRowEndsOnlyTheAnswersReadFromIt() {
        let cache = TokenLookupCache()
        let api = TokenLookupCache.Row(table: "tokens", rowID: 1)
        let alice = TokenLookupCache.Row(table: "sessions", rowID: 1)
        let bob = TokenLookupCache.Row(table: "sessions", rowID: 2)
        cache.store(Self.signedIn, rows: [api, alice], apiToken: "a", webAuthToken: "alice", generation: cache.generation, now: 0)
        cache.store(Self.signedIn, rows: [api, bob], apiToken: "a", webAuthToken: "bob", generation: cache.generation, now: 0)
        cache.store(Self.found, rows: [api], apiToken: "a", webAuthToken: nil, generation: cache.generation, now: 0)
        #expect(cache.count == 3)

        cache.invalidate(rows: [alice, TokenLookupCache.Row(table: "users", rowID: 1)])
        #expect(cache.lookup(apiToken: "a", webAuthToken: "alice", now: 0) == nil)
        #expect(cache.lookup(apiToken: "a", webAuthToken: "bob", now: 0) == Self.signedIn)
        #expect(cache.count == 2)
        cache.invalidate(rows: [api])
        #expect(cache.count == 0, "every answer read from the API token's row")
    }

    @Test func unknownTokensAreNeverKept() {
        let cache = TokenLookupCache()
        let generation = cache.generation
        cache.store(TokenLookup(container: nil, user: nil), rows: [], apiToken: "guess", webAuthToken: nil, generation: generation, now: 0)
        cache.store(Self.found, rows: [], apiToken: "a", webAuthToken: "unknown", generation: generation, now: 0)
        #expect(cache.lookup(apiToken: "guess", webAuthToken: nil, now: 0) == nil)
        #expect(cache.lookup(apiToken: "a", webAuthToken: "unknown", now: 0) == nil)
    }

    @Test func aFullCacheStartsOver() {
        let cache = TokenLookupCache()
        for index in 0..<TokenLookupCache.capacity {
            cache.store(Self.found, rows: [], apiToken: "t\(index)", webAuthToken: nil, generation: cache.generation, now: 0)
        }
        #expect(cache.lookup(apiToken: "t0", webAuthToken: nil, now: 0) == Self.found)
        cache.store(Self.found, rows: [], apiToken: "one more", webAuthToken: nil, generation: cache.generation, now: 0)
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
            #expect(store.tokenLookups.count == 1)
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            #expect(store.tokenLookups.count == 1, "a zone is not a table a lookup reads")
            // Records are written through SQLite's C API (BoundStatement), beside the observer.
            let saved = try await store.modifyRecords(
                [F.operation(.create, "a"), F.operation(.create, "b")], zone: "Z", atomic: false, policy: F.policy(),
                caller: F.caller, in: F.alice)
            #expect(F.saved(saved).allSatisfy { $0 != nil })
            #expect(store.tokenLookups.count == 1, "nor is a record")
            _ = try await store.createAPIToken(container: F.container)
            #expect(store.tokenLookups.count == 0, "an insert into one ends every answer")
        }
    }

    /// A session's "last seen" write (once a minute per session) ends that session's answers,
    /// not every user's: on a busy server, other users keep theirs.
    @Test func aSessionsTouchEndsOnlyItsOwnAnswers() async throws {
        try await Self.withTwoStores(clock: ManualWallClock(millis: F.past)) { store, _ in
            let api = try await store.createContainer(F.container)
            let alice = try await store.createUser(name: "alice", email: nil, firstName: nil, lastName: nil, container: F.container)
            let bob = try await store.createUser(name: "bob", email: nil, firstName: nil, lastName: nil, container: F.container)
            let aliceLookup = try await store.lookUpTokens(apiToken: api.token, webAuthToken: alice.token)
            _ = try await store.lookUpTokens(apiToken: api.token, webAuthToken: bob.token)
            #expect(store.tokenLookups.count == 2)

            let session = try #require(aliceLookup.session)
            try await store.touchSession(id: session.id, at: F.past + 60_000)
            #expect(store.tokenLookups.count == 1)
            let touched = try await store.lookUpTokens(apiToken: api.token, webAuthToken: alice.token)
            #expect(touched.session?.lastSeenAt == F.past + 60_000, "read again, with the new time")
        }
    }

    /// Every table a lookup reads reports its row changes (a `WITHOUT ROWID` table would not,
    /// and a change to it would be served stale until the answer expired).
    @Test(arguments: [
        ("tokens", "kind"), ("sessions", "device_name"), ("users", "email"), ("user_identities", "record_name"),
    ])
    func aChangeToAnyTableALookupReadsEndsTheAnswer(table: String, column: String) async throws {
        #expect(AccountTablesObserver.tables.contains(table))
        try await Self.withTwoStores(clock: ManualWallClock(millis: F.past)) { store, _ in
            let api = try await store.createContainer(F.container)
            let alice = try await store.createUser(name: "alice", email: nil, firstName: nil, lastName: nil, container: F.container)
            _ = try await store.lookUpTokens(apiToken: api.token, webAuthToken: alice.token)
            #expect(store.tokenLookups.count == 1)
            try await store.pool.write { db in try db.execute(sql: "UPDATE \(table) SET \(column) = \(column)") }
            #expect(store.tokenLookups.count == 0)
        }
    }
}
