import Foundation
import GRDB
import NimbusProtocol
import Testing

@testable import NimbusSQLite
@testable import NimbusStore

/// A zone's rows lie in the file in the order they were written (`v14-records-in-write-order`),
/// so a change feed page, a zone's rows in version order, reads consecutive rows rather than
/// one row from each of 200 places.
@Suite("Records in write order (SQLite)")
struct RecordWriteOrderTests {
    private typealias F = Fixture

    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-write-order-\(UUID()).sqlite").path
    }

    static func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// `(zone, name, version)` of every row of `owner`'s database, in the table's order.
    static func rowsInFileOrder(_ path: String, owner: String) throws -> [(zone: String, name: String, version: Int64)] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT zone, name, version FROM records
                    WHERE db = (SELECT id FROM databases WHERE owner = ?) ORDER BY rowid
                    """,
                arguments: [owner]
            ).map { ($0["zone"], $0["name"], $0["version"]) }
        }
    }

    /// Whether each zone's rows come in increasing version order.
    static func eachZoneInVersionOrder(_ rows: [(zone: String, name: String, version: Int64)]) -> Bool {
        Dictionary(grouping: rows, by: \.zone).values.allSatisfy { zoneRows in
            zip(zoneRows, zoneRows.dropFirst()).allSatisfy { $0.version < $1.version }
        }
    }

    @Test func updatesAndDeletionsMoveARowToTheEndOfTheTable() async throws {
        let path = Self.temporaryPath()
        defer { Self.remove(path) }
        let store = try SQLiteStore(path: path)
        _ = try await store.modifyZones([.create(zoneName: "Z"), .create(zoneName: "Y")], in: F.alice)
        // Names in the reverse of their creation order, in two zones written in turn.
        for index in stride(from: 9, through: 0, by: -1) {
            _ = try await store.modify([F.operation(.create, "r\(index)")], zone: "Z")
            _ = try await store.modify([F.operation(.create, "s\(index)")], zone: "Y")
        }
        _ = try await store.modify([F.operation(.forceUpdate, "r9", fields: ["n": 1])], zone: "Z")
        _ = try await store.modify([F.operation(.forceDelete, "r5"), F.operation(.forceUpdate, "r0")], zone: "Z")
        try store.close()

        let rows = try Self.rowsInFileOrder(path, owner: "_alice")
        #expect(rows.count == 20)
        #expect(Self.eachZoneInVersionOrder(rows), "\(rows)")
        // The rows written last lie last, one row for each name.
        #expect(rows.suffix(3).map(\.name).sorted() == ["r0", "r5", "r9"])
        #expect(Set(rows.map { "\($0.zone)/\($0.name)" }).count == 20)
    }

    @Test func upgradingStoresEachZonesRowsInVersionOrderAndKeepsThem() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-upgrade-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = (directory as NSString).appendingPathComponent("nimbus.sqlite")
        #expect(try SQLiteStore.pendingMigrations(directory: directory) == [], "no file yet: nothing to upgrade")
        let queue = try DatabaseQueue(path: path)
        try SQLiteStore.migrator.migrate(queue, upTo: "v13-zone-query-indexes")
        try await queue.write { db in
            // Keyed by name, these rows lay in name order: a, b, c, d in zone Z, against
            // versions 4, 2, 3, 1.
            try db.execute(
                sql: """
                    INSERT INTO databases (id, container, environment, scope, owner, version) VALUES
                        (1, '\(F.container)', 'development', 'private', '_alice', 6),
                        (2, '\(F.container)', 'development', 'private', '_bob', 1);
                    INSERT INTO zones (db, name, incarnation, change_version, meta_version) VALUES
                        (1, 'Z', 1, 5, 1), (1, 'Y', 1, 6, 2), (2, 'Z', 1, 1, 1);
                    INSERT INTO records (db, zone, name, type, fields, created_at, modified_at, version, created_version, deleted)
                    VALUES
                        (1, 'Z', 'a', 'Item', '{"t":"four"}', 0, 0, 4, 4, 0),
                        (1, 'Z', 'b', 'Item', '{}', 0, 0, 2, 2, 0),
                        (1, 'Z', 'c', 'Item', '{}', 0, 0, 3, 1, 1),
                        (1, 'Z', 'd', 'Item', '{}', 0, 0, 1, 1, 0),
                        (1, 'Y', 'a', 'Item', '{}', 0, 0, 6, 6, 0),
                        (1, 'Y', 'b', 'Item', '{}', 0, 0, 5, 5, 0),
                        (2, 'Z', 'a', 'Item', '{}', 0, 0, 1, 1, 0);
                    """)
        }
        try queue.close()
        // What a server names in its log before it upgrades.
        #expect(try SQLiteStore.pendingMigrations(directory: directory) == ["v14-records-in-write-order"])

        let store = try SQLiteStore(path: path)
        #expect(try SQLiteStore.pendingMigrations(directory: directory) == [])
        let rows = try Self.rowsInFileOrder(path, owner: "_alice")
        #expect(rows.map(\.name) == ["b", "a", "d", "b", "c", "a"], "Y's rows then Z's, each in version order: \(rows)")
        #expect(try Self.rowsInFileOrder(path, owner: "_bob").map(\.name) == ["a"])

        // Every row came over whole: the feed reads them, the tombstone too.
        let (pages, _) = try await store.allChanges(zone: "Z", since: nil, pageSize: 10)
        let changes = pages.flatMap { $0 }
        #expect(changes.map(\.recordName) == ["d", "b", "a"])
        #expect(changes.last?.fieldsJSON == #"{"t":"four"}"#)

        // A write after the upgrade replaces the row of its name, at the end of the table.
        let outcome = try await store.modify([F.operation(.forceUpdate, "d", fields: ["n": 1])], zone: "Z")
        #expect(F.errorCodes(outcome) == [nil])
        try store.close()
        let after = try Self.rowsInFileOrder(path, owner: "_alice")
        #expect(after.map(\.name) == ["b", "a", "b", "c", "a", "d"])
        #expect(Self.eachZoneInVersionOrder(after), "\(after)")
    }
}
