import Foundation
import GRDB
import NimbusProtocol
import Testing

@testable import NimbusSQLite
@testable import NimbusStore

/// Upgrading a SQLite store to `v5-server-secret`: earlier releases registered any token a
/// client sent; those rows (inserted registered, `registered_at = created_at`) stop being
/// courier credentials, while issued tokens keep working.
@Suite("Push token migration")
struct PushTokenMigrationTests {
    @Test func upgradingRemovesTheTokensTheServerNeverIssued() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-migrate-\(UUID()).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let queue = try DatabaseQueue(path: path)
        try SQLiteStore.migrator.migrate(queue, upTo: "v4-query")
        try await queue.write { db in
            for (token, created, registered) in [("issued", 1, nil), ("issued-registered", 1, 5), ("made-up", 7, 7)] as [(String, Int64, Int64?)] {
                try db.execute(
                    sql: """
                        INSERT INTO push_tokens (token, container, environment, user, apns_environment, created_at, registered_at)
                        VALUES (?, 'c', 'development', '_alice', 'development', ?, ?)
                        """,
                    arguments: [token, created, registered])
            }
        }
        try queue.close()

        let store = try SQLiteStore(path: path)
        defer { try? store.close() }
        #expect(try await store.pushToken("made-up") == nil)
        #expect(try await store.pushToken("issued")?.registered == false)
        #expect(try await store.pushToken("issued-registered")?.registered == true)
        let recipient = NotificationRecipient(container: "c", environment: .development, userRecordName: "_alice")
        #expect(try await store.registerPushToken("issued", for: recipient, apnsEnvironment: "development", now: 9).registered)
        await #expect(throws: CloudKitError.self) {
            _ = try await store.registerPushToken("made-up", for: recipient, apnsEnvironment: "development", now: 9)
        }
    }
}
