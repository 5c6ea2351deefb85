import Foundation
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Web auth tokens issued before sessions existed keep working after the upgrade: they
/// become sessions on the device "operator-issued", stored only as hashes, and start their
/// idle time at the migration.
@Suite("Session migration")
struct SessionMigrationTests {
    @Test(arguments: Engine.available)
    func webAuthTokensFromBeforeSessionsStillWork(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await server.harness.stopServer()

            // The database as an older release left it: web auth tokens in `tokens`, in plain text,
            // issued long ago; the sessions migration not yet applied.
            let live = "legacy" + String(repeating: "a", count: 58)
            let revoked = "legacy" + String(repeating: "b", count: 58)
            var statements = [
                """
                INSERT INTO tokens (token, kind, container, user_name, created_at)
                VALUES ('\(live)', 'web', '\(TestServer.container)', 'alice', 1000)
                """,
                """
                INSERT INTO tokens (token, kind, container, user_name, created_at, revoked_at)
                VALUES ('\(revoked)', 'web', '\(TestServer.container)', 'alice', 1000, 2000)
                """,
            ]
            switch engine {
            case .sqlite:
                statements += [
                    "DROP TABLE sessions", "DROP TABLE user_logins", "DROP TABLE one_time_codes", "DROP TABLE container_signin",
                    "DELETE FROM grdb_migrations WHERE identifier = 'v9-sessions'",
                ]
            case .postgres, .memory:  // (no server runs on .memory)
                statements += ["DELETE FROM nimbus_schema_version WHERE version >= 11"]
            }
            try await StoredRows.execute(statements, on: server.storage)

            try await server.harness.restart()
            var client = alice
            client.webAuthToken = live
            let me = try await client.get("users/current")
            #expect(me.status == 200)
            #expect(me["userRecordName"]?.string == alice.userRecordName)
            client.webAuthToken = revoked
            #expect(try await client.get("users/current").serverErrorCode == "AUTHENTICATION_FAILED")

            #expect(try await StoredRows.integer("SELECT count(*) FROM tokens WHERE kind = 'web'", on: server.storage) == 0)
            let sessions = try await server.server.store.listSessions(container: TestServer.container, userName: "alice")
            #expect(sessions.map(\.device.name).allSatisfy { $0 == "operator-issued" })
            #expect(sessions.filter(\.revoked).count == 1)
            #expect(
                try await StoredRows.integer(
                    "SELECT count(*) FROM sessions WHERE token_hash = '\(SessionToken.hash(live))'", on: server.storage) == 1)
        }
    }
}
