import Foundation
import NimbusProtocol
import NimbusStore
import PostgresNIO
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    /// A node answers token lookups from memory while it LISTENs for changes to the account
    /// tables: a revocation on another node, by a `nimbus` command or by hand in SQL ends the
    /// answers it touches when it is announced, one through the node itself at once. The
    /// nodes' clock stands still, so no answer here ends by expiring.
    @Suite("Token lookups from memory", .timeLimit(.minutes(1)))
    struct TokenLookupTests {
        static let container = "iCloud.test"

        /// Two nodes on one schema, a container with an API token and two signed-in users;
        /// node 0's account watch listening and its lookups of both users kept.
        func withWatchedNodes(
            _ body: (_ nodes: [PostgresStore], _ api: IssuedToken, _ alice: IssuedToken, _ bob: IssuedToken,
                _ events: inout AsyncStream<AccountWatchEvent>.Iterator) async throws -> Void
        ) async throws {
            let clock = ManualWallClock(millis: 1_800_000_000_000)
            try await TestPostgres.withNodes(2, clock: clock.wallClock) { nodes in
                let api = try await nodes[1].createContainer(Self.container)
                let alice = try await nodes[1].createUser(
                    name: "alice", email: nil, firstName: nil, lastName: nil, container: Self.container)
                let bob = try await nodes[1].createUser(
                    name: "bob", email: nil, firstName: nil, lastName: nil, container: Self.container)
                var events = nodes[0].accountWatchEvents().makeAsyncIterator()
                // The first lookup starts the watch and is not kept: it began before the LISTEN.
                _ = try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: alice.token)
                #expect(await events.next() == .listening)
                #expect(nodes[0].tokenLookups.count == 0)
                #expect(try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: alice.token).user == alice.user)
                #expect(try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: bob.token).user == bob.user)
                #expect(nodes[0].tokenLookups.count == 2)
                try await body(nodes, api, alice, bob, &events)
            }
        }

        /// Node 0's next announcement of a change to the account tables.
        func heard(_ events: inout AsyncStream<AccountWatchEvent>.Iterator) async -> String? {
            guard case .heard(let payload) = await events.next() else { return nil }
            return payload
        }

        @Test func aSessionRevokedOnAnotherNodeEndsOnlyThatSessionsAnswers() async throws {
            try await withWatchedNodes { nodes, api, alice, bob, events in
                let session = try #require(try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: alice.token).session)
                #expect(try await nodes[1].revokeToken(alice.token))
                #expect(await heard(&events) == "session \(session.id)")
                #expect(nodes[0].tokenLookups.count == 1, "bob's answer is kept")
                #expect(try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: alice.token).user == nil)
                #expect(try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: bob.token).user == bob.user)
            }
        }

        @Test func anAPITokenRevokedOnAnotherNodeEndsEveryAnswer() async throws {
            try await withWatchedNodes { nodes, api, _, bob, events in
                #expect(try await nodes[1].revokeToken(api.token))
                #expect(await heard(&events) == "*")
                #expect(nodes[0].tokenLookups.count == 0)
                let after = try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: bob.token)
                #expect(after.container == nil)
                #expect(after.user == bob.user, "the session stays valid; the request is refused for its API token")
            }
        }

        /// An operator's `UPDATE` typed in psql is announced by the tables' triggers as well.
        @Test(arguments: [
            "UPDATE tokens SET revoked_at = 1 WHERE kind = 'api'", "UPDATE users SET email = 'x@example.com'",
            "UPDATE user_identities SET discoverable = true", "DELETE FROM sessions",
        ])
        func aChangeMadeByHandIsHeard(statement: String) async throws {
            try await withWatchedNodes { nodes, _, _, _, events in
                try await nodes[1].rows(PostgresQuery(unsafeSQL: statement))
                #expect(await heard(&events) != nil)
                #expect(nodes[0].tokenLookups.count < 2)
            }
        }

        @Test func aChangeThroughTheNodeItselfEndsItsAnswersAtOnce() async throws {
            try await withWatchedNodes { nodes, api, alice, bob, _ in
                let session = try #require(try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: bob.token).session)
                try await nodes[0].touchSession(id: session.id, at: session.lastSeenAt + 60_000)
                #expect(nodes[0].tokenLookups.count == 1, "bob's answer ended, alice's kept")
                let touched = try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: bob.token)
                #expect(touched.session?.lastSeenAt == session.lastSeenAt + 60_000, "read again, with the new time")

                #expect(try await nodes[0].revokeToken(alice.token))
                #expect(try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: alice.token).user == nil)
                #expect(try await nodes[0].revokeToken(api.token))
                #expect(try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: nil).container == nil)
            }
        }

        /// Unknown or revoked tokens are read every time: a client guessing fills nothing.
        @Test func unknownTokensAreNotKept() async throws {
            try await withWatchedNodes { nodes, api, _, _, _ async throws in
                #expect(try await nodes[0].lookUpTokens(apiToken: "guess", webAuthToken: nil).container == nil)
                #expect(try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: "guess").user == nil)
                #expect(nodes[0].tokenLookups.count == 2)
            }
        }

        /// When the LISTEN's connection drops, changes could go unheard: the node keeps
        /// nothing until it listens again.
        @Test func aDroppedListenKeepsNothingUntilItIsBack() async throws {
            try await withWatchedNodes { nodes, api, alice, _, events in
                try await nodes[1].rows(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid()
                      AND query LIKE \("%LISTEN%\(nodes[0].accountsChannel)%")
                    """)
                #expect(await events.next() == .listening, "reconnected")
                #expect(nodes[0].tokenLookups.count == 0)
                _ = try await nodes[0].lookUpTokens(apiToken: api.token, webAuthToken: alice.token)
                #expect(nodes[0].tokenLookups.count == 1)
            }
        }
    }
}
