import Foundation
import GRDB
import NimbusProtocol

/// The device's local SQLite store: the last server copy of every synced record, the change
/// tokens, the outbox of pending changes, the conflict log and the quarantine.
///
/// The app may keep its own tables in the same database and change them together with the
/// outbox in one transaction (``write(_:)``), so a crash can never separate an edit from its
/// outbox entry.
public final class LocalStore: Sendable {
    /// The GRDB pool (`Sendable`). Apps may read from it and observe it.
    public let pool: DatabasePool

    public init(path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
    }

    // The tables are rowid tables (not WITHOUT ROWID) so that GRDB's ValueObservation and
    // DatabaseRegionObservation see the engine's writes: apps can observe the store.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("sync-v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE nimbus_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    CREATE TABLE nimbus_zones (
                        zone TEXT PRIMARY KEY,
                        token TEXT,
                        confirmed INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE TABLE nimbus_records (
                        zone TEXT NOT NULL,
                        name TEXT NOT NULL,
                        type TEXT NOT NULL,
                        tag TEXT NOT NULL,
                        fields TEXT NOT NULL,
                        system BLOB NOT NULL,
                        -- 1 when this copy came from a send (or a conflict) rather than the zone's change
                        -- feed: the next complete fetch must return it, or it was created and deleted since
                        -- the device's token (which the feed leaves out).
                        unconfirmed INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (zone, name)
                    );
                    CREATE TABLE nimbus_outbox (
                        zone TEXT NOT NULL,
                        name TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        type TEXT NOT NULL,
                        fields TEXT NOT NULL,
                        changed_keys TEXT NOT NULL,
                        -- for deletes: the change tag of the version the user deleted (NULL if it
                        -- never reached the server); the delete is locked to it
                        base_tag TEXT,
                        revision INTEGER NOT NULL,
                        enqueued_at INTEGER NOT NULL,
                        PRIMARY KEY (zone, name)
                    );
                    CREATE TABLE nimbus_conflicts (
                        id INTEGER PRIMARY KEY,
                        zone TEXT NOT NULL,
                        name TEXT NOT NULL,
                        resolved_at INTEGER NOT NULL,
                        resolutions TEXT NOT NULL
                    );
                    CREATE TABLE nimbus_quarantine (
                        id INTEGER PRIMARY KEY,
                        account TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        name TEXT NOT NULL,
                        type TEXT NOT NULL,
                        fields TEXT NOT NULL,
                        quarantined_at INTEGER NOT NULL
                    );
                    """)
        }
        return migrator
    }

    /// Runs the app's change and its outbox entries in one transaction.
    ///
    /// ```swift
    /// try store.write { db, outbox in
    ///     try db.execute(sql: "INSERT INTO my_bookmarks …")
    ///     try outbox.save(LocalRecord(zoneName: "ReadingList", recordName: id, recordType: "Bookmark", fields: …))
    /// }
    /// ```
    public func write<T>(_ body: (Database, Outbox) throws -> T) throws -> T {
        try pool.write { db in try body(db, Outbox(db: db)) }
    }

    /// The records of a zone as the device sees them (pending changes applied), by name.
    public func records(inZone zone: String) throws -> [LocalRecord] {
        try pool.read { db in try Self.records(db, zone: zone) }
    }

    /// One record as the device sees it, or nil if absent or pending deletion.
    public func record(zone: String, name: String) throws -> LocalRecord? {
        try pool.read { db in try Self.records(db, zone: zone, name: name).first }
    }

    static func records(_ db: GRDB.Database, zone: String, name: String? = nil) throws -> [LocalRecord] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT COALESCE(o.name, r.name) AS name, COALESCE(o.type, r.type) AS type,
                       COALESCE(o.fields, r.fields) AS fields, r.tag AS tag, o.kind AS kind
                FROM nimbus_records r LEFT JOIN nimbus_outbox o ON o.zone = r.zone AND o.name = r.name
                WHERE r.zone = ?1 AND (?2 IS NULL OR r.name = ?2)
                UNION ALL
                SELECT o.name, o.type, o.fields, NULL, o.kind FROM nimbus_outbox o
                WHERE o.zone = ?1 AND (?2 IS NULL OR o.name = ?2)
                  AND NOT EXISTS (SELECT 1 FROM nimbus_records r WHERE r.zone = o.zone AND r.name = o.name)
                ORDER BY name
                """,
            arguments: [zone, name])
        return try rows.compactMap { row in
            let kind: String? = row["kind"]
            if kind == PendingChange.Kind.delete.rawValue { return nil }
            return LocalRecord(
                zoneName: zone, recordName: row["name"], recordType: row["type"],
                fields: try [String: FieldValue](jsonText: row["fields"]), serverChangeTag: row["tag"],
                isPending: kind != nil)
        }
    }

    /// The changes waiting to be sent, oldest first.
    public func pendingChanges() throws -> [PendingChange] {
        try pool.read { db in try Outbox.pending(db, limit: .max) }
    }

    /// The number of changes waiting to be sent.
    public func pendingCount() throws -> Int {
        try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM nimbus_outbox") ?? 0 }
    }

    /// The conflict log, newest first.
    public func conflictLog(limit: Int = 100) throws -> [ConflictRecord] {
        try pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM nimbus_conflicts ORDER BY id DESC LIMIT ?", arguments: [limit]
            ).map { row in
                let text: String = row["resolutions"]
                let resolutions = (try? JSONDecoder().decode([FieldResolution].self, from: Data(text.utf8))) ?? []
                return ConflictRecord(
                    zoneName: row["zone"], recordName: row["name"], resolvedAt: row["resolved_at"],
                    resolutions: resolutions)
            }
        }
    }

    /// Records and pending changes set aside at an account switch, by the account they belonged to.
    public func quarantined() throws -> [(account: String, record: LocalRecord, pending: Bool)] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM nimbus_quarantine ORDER BY id").map { row in
                let record = LocalRecord(
                    zoneName: row["zone"], recordName: row["name"], recordType: row["type"],
                    fields: try [String: FieldValue](jsonText: row["fields"]))
                let kind: String = row["kind"]
                return (row["account"], record, kind != "server")
            }
        }
    }
}
