import Foundation
import GRDB
import NimbusProtocol
import Testing

@testable import NimbusSQLite
@testable import NimbusStore

/// Upgrading a SQLite store to `v8-usage`: the counter of every existing database is filled
/// from its rows, so quotas hold from the first write after the upgrade.
@Suite("Usage migration (SQLite)")
struct UsageMigrationTests {
    @Test func upgradingFillsEachDatabasesCounterFromItsRows() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-usage-\(UUID()).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let queue = try DatabaseQueue(path: path)
        try SQLiteStore.migrator.migrate(queue, upTo: "v7-assets")
        let shared = String(repeating: "a", count: 64)
        let alone = String(repeating: "b", count: 64)
        let collectable = String(repeating: "c", count: 64)
        try await queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO databases (id, container, environment, scope, owner, version) VALUES
                        (1, 'c', 'development', 'private', '_alice', 9), (2, 'c', 'development', 'private', '_bob', 3);
                    INSERT INTO records (db, zone, name, type, fields, created_at, modified_at, version, created_version, deleted)
                    VALUES
                        (1, 'Z', 'live', 'Item', '{"t":"été"}', 0, 0, 1, 1, 0),
                        (1, 'Y', 'other', 'Item', '{}', 0, 0, 2, 2, 0),
                        (1, 'Z', 'gone', 'Item', '{"t":"xxxxxxxxxx"}', 0, 0, 3, 3, 1),
                        (2, 'Z', 'bobs', 'Item', '{"n":1}', 0, 0, 1, 1, 0);
                    INSERT INTO assets (db, sha256, size, created_at) VALUES
                        (1, '\(shared)', 5000, 0), (1, '\(alone)', 700, 0), (1, '\(collectable)', 90000, 0),
                        (2, '\(shared)', 5000, 0);
                    INSERT INTO asset_refs (db, zone, record, sha256) VALUES
                        (1, 'Z', 'live', '\(shared)'), (1, 'Y', 'other', '\(shared)'), (1, 'Z', 'live', '\(alone)');
                    """)
        }
        try queue.close()

        let store = try SQLiteStore(path: path)
        defer { try? store.close() }
        let alice = DatabaseKey(container: "c", environment: .development, scope: .private, owner: "_alice")
        let bob = DatabaseKey(container: "c", environment: .development, scope: .private, owner: "_bob")
        // `{"t":"été"}` is 13 bytes of UTF-8 (11 characters); `{}` 2; the tombstone none. The
        // shared asset counts once, the unreferenced one not at all.
        #expect(try await store.usage(of: alice) == DatabaseUsage(recordBytes: 15, assetBytes: 5_700))
        // Bob's database holds the same bytes but no record references them.
        #expect(try await store.usage(of: bob) == DatabaseUsage(recordBytes: 7, assetBytes: 0))
        #expect(try await store.usage(of: alice) == store.recountUsage(of: alice))
    }
}
