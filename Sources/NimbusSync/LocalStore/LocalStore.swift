import Foundation
import GRDB
import NIOConcurrencyHelpers
import NimbusProtocol
import NimbusSQLiteBinding

/// The device's local SQLite store: the last server copy of every synced record, the change
/// tokens, the outbox of pending changes, the conflict log and the quarantine.
///
/// The app may keep its own tables in the same database and change them together with the
/// outbox in one transaction (``write(_:)``), so a crash can never separate an edit from its
/// outbox entry. It reads through ``read(_:)-(Database)->T`` and hears of changes to the
/// records through ``changes()``; the engine's own tables are private to it.
public final class LocalStore: Sendable {
    let pool: DatabasePool
    /// The store's file.
    let path: String
    /// The device's one clock: the store stamps the outbox, the conflict log and the
    /// quarantine with its time, and every ``SyncEngine`` over the store waits, draws jitter
    /// and reads the time through it.
    public let clock: SyncClock
    /// The time now, on ``clock``.
    var now: @Sendable () -> Date { clock.now }
    /// Subscribers of ``changes()``.
    let subscribers = NIOLockedValueBox<[UUID: AsyncStream<Set<LocalRecordID>>.Continuation]>([:])
    /// Told of the changes each committed transaction gave up on (the engines over this store).
    let giveUpObservers = NIOLockedValueBox<[UUID: @Sendable ([GivenUpChange]) -> Void]>([:])

    /// Opens (or creates) the store at `path`.
    /// - Parameter clock: the device's clock, for the store and the engines over it (tests
    ///   pass one that does not wait, or whose time they move).
    public init(path: String, clock: SyncClock = .system) throws {
        self.path = path
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        // Checkpoints run beside the commits, not inside them (``WALCheckpointer``): neither
        // the engine's writes nor the app's wait for the log to be copied.
        let checkpointer = WALCheckpointer(path: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in checkpointer.takeOver(db) }
        pool = try DatabasePool(path: path, configuration: configuration)
        self.clock = clock
        try Self.migrator.migrate(pool)
    }

    /// Opens (or creates) the store at `path`, stamping with `now`.
    @available(*, deprecated, message: "pass the device's one clock: LocalStore(path:clock:) with SyncClock(sleep:now:)")
    public convenience init(path: String, now: @escaping @Sendable () -> Date) throws {
        try self.init(path: path, clock: SyncClock(sleep: SyncClock.system.sleep, now: now))
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
        migrator.registerMigration("sync-v2") { db in
            // The send order: a zone at a time (a request names one zone), oldest first.
            try db.execute(
                sql: "CREATE INDEX nimbus_outbox_send_order ON nimbus_outbox (zone, enqueued_at, name)")
        }
        migrator.registerMigration("sync-v3-assets") { db in
            try db.execute(
                sql: """
                    -- How far each asset file of a pending save got: its upload URL (kept before a byte
                    -- is sent, so an interrupted upload resumes), then the upload's answer with its receipt.
                    CREATE TABLE nimbus_asset_uploads (
                        zone TEXT NOT NULL,
                        name TEXT NOT NULL,
                        field TEXT NOT NULL,
                        file TEXT NOT NULL,
                        url TEXT,
                        uploaded TEXT,
                        PRIMARY KEY (zone, name, field, file)
                    );
                    -- The downloaded asset files (named by checksum in the cache directory).
                    CREATE TABLE nimbus_asset_cache (
                        checksum TEXT PRIMARY KEY,
                        size INTEGER NOT NULL,
                        last_used INTEGER NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("sync-v4-parent") { db in
            // A record's `parent` (the record it belongs under, in the same zone): what puts it
            // in a shared record hierarchy.
            try db.execute(
                sql: """
                    ALTER TABLE nimbus_records ADD COLUMN parent TEXT;
                    ALTER TABLE nimbus_outbox ADD COLUMN parent TEXT;
                    """)
        }
        migrator.registerMigration("sync-v5-diagnostics") { db in
            try db.execute(
                sql: """
                    -- What became of each send of a pending change: sends that did not take it off the
                    -- outbox, the last one's error (RecordedError as JSON) and when it goes out again.
                    ALTER TABLE nimbus_outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE nimbus_outbox ADD COLUMN last_error TEXT;
                    ALTER TABLE nimbus_outbox ADD COLUMN last_attempt_at INTEGER;
                    ALTER TABLE nimbus_outbox ADD COLUMN next_attempt_at INTEGER;
                    -- When each zone's token was last committed.
                    ALTER TABLE nimbus_zones ADD COLUMN token_saved_at INTEGER;
                    -- Why a change was set aside, and enough of it to put it back in the outbox as it was.
                    -- AUTOINCREMENT: an ID the app holds (to retry or discard) never names another change.
                    CREATE TABLE nimbus_quarantine_v5 (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        account TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        name TEXT NOT NULL,
                        type TEXT NOT NULL,
                        fields TEXT NOT NULL,
                        quarantined_at INTEGER NOT NULL,
                        reason TEXT NOT NULL DEFAULT 'unrecorded',
                        error TEXT,
                        changed_keys TEXT,
                        base_tag TEXT,
                        parent TEXT,
                        attempts INTEGER NOT NULL DEFAULT 0
                    );
                    -- Server copies were only ever quarantined at an account switch.
                    INSERT INTO nimbus_quarantine_v5 (id, account, kind, zone, name, type, fields, quarantined_at, reason)
                    SELECT id, account, kind, zone, name, type, fields, quarantined_at,
                           CASE kind WHEN 'server' THEN 'accountChanged' ELSE 'unrecorded' END
                    FROM nimbus_quarantine;
                    DROP TABLE nimbus_quarantine;
                    ALTER TABLE nimbus_quarantine_v5 RENAME TO nimbus_quarantine;
                    -- The last fetch and send of each zone ('' is the database's changes/database)
                    -- and how often its token expired.
                    CREATE TABLE nimbus_activity (
                        scope TEXT PRIMARY KEY,
                        fetched_at INTEGER,
                        fetch_error TEXT,
                        sent_at INTEGER,
                        send_error TEXT,
                        token_expiries INTEGER NOT NULL DEFAULT 0
                    );
                    """)
        }
        migrator.registerMigration("sync-v6-asset-format") { db in
            try db.execute(
                sql: """
                    -- The encrypted-asset format each upload began in: a resumed upload continues in it.
                    -- The uploads kept before this column were begun in version 2.
                    ALTER TABLE nimbus_asset_uploads ADD COLUMN format INTEGER;
                    UPDATE nimbus_asset_uploads SET format = 2;
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
        try pool.write { db in
            let changes = ChangeTracker()
            let result = try body(db, Outbox(db: db, changes: changes, now: now))
            publishOnCommit(changes, db)
            return result
        }
    }

    /// Reads the app's tables and the device's records (``records(in:zone:)``,
    /// ``pendingCount(in:)``) in one consistent snapshot.
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.read(body)
    }

    /// Reads in one consistent snapshot, without blocking the caller's thread.
    public func read<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(body)
    }

    /// Runs the engine's reads and writes in one write transaction.
    func transaction<T: Sendable>(_ body: @Sendable (StoreTransaction) throws -> T) async throws -> T {
        let now = self.now
        return try await pool.write { db in
            let transaction = StoreTransaction(db: db, changes: ChangeTracker(), now: now)
            let result = try body(transaction)
            self.publishOnCommit(transaction.changes, db)
            return result
        }
    }

    /// Runs the engine's reads in one snapshot.
    func reading<T: Sendable>(_ body: @Sendable (StoreTransaction) throws -> T) async throws -> T {
        let now = self.now
        return try await pool.read { db in try body(StoreTransaction(db: db, changes: ChangeTracker(), now: now)) }
    }

    /// The records of a zone as the device sees them (pending changes applied), by name.
    public func records(inZone zone: String) throws -> [LocalRecord] {
        try pool.read { db in try Self.records(db, zone: zone) }
    }

    /// One record as the device sees it, or nil if absent or pending deletion.
    public func record(zone: String, name: String) throws -> LocalRecord? {
        try pool.read { db in try Self.records(db, zone: zone, name: name).first }
    }

    /// The records of a zone (or the one named `name`) as the device sees them. The two
    /// queries differ only in their name conditions: an `(? IS NULL OR name = ?)` form would
    /// make SQLite read the whole zone for one record (the key's second column unused).
    static func records(_ db: GRDB.Database, zone: String, name: String? = nil) throws -> [LocalRecord] {
        let named = name == nil ? "" : " AND r.name = ?2"
        let outboxNamed = name == nil ? "" : " AND o.name = ?2"
        let statement = try db.cachedStatement(
            sql: """
                SELECT COALESCE(o.name, r.name) AS name, COALESCE(o.type, r.type) AS type,
                       COALESCE(o.fields, r.fields) AS fields, r.tag AS tag, o.kind AS kind,
                       CASE WHEN o.name IS NULL THEN r.parent ELSE o.parent END AS parent
                FROM nimbus_records r LEFT JOIN nimbus_outbox o ON o.zone = r.zone AND o.name = r.name
                WHERE r.zone = ?1\(named)
                UNION ALL
                SELECT o.name, o.type, o.fields, NULL, o.kind, o.parent FROM nimbus_outbox o
                WHERE o.zone = ?1\(outboxNamed)
                  AND NOT EXISTS (SELECT 1 FROM nimbus_records r WHERE r.zone = o.zone AND r.name = o.name)
                ORDER BY name
                """)
        let rows = try Row.fetchAll(statement, arguments: name.map { [zone, $0] } ?? [zone])
        return try rows.compactMap { row in
            let kind: String? = row["kind"]
            if kind == PendingChange.Kind.delete.rawValue { return nil }
            return LocalRecord(
                zoneName: zone, recordName: row["name"], recordType: row["type"],
                fields: try [String: FieldValue](jsonText: row["fields"]), serverChangeTag: row["tag"],
                isPending: kind != nil, parent: row["parent"])
        }
    }

    /// The changes waiting to be sent, oldest first.
    public func pendingChanges() throws -> [PendingChange] {
        try pool.read { db in try Outbox.pending(db, limit: .max) }
    }

    /// The number of changes waiting to be sent.
    public func pendingCount() throws -> Int {
        try pool.read { db in try Self.pendingCount(in: db) }
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

    /// Records and pending changes set aside at an account switch, and the pending changes the
    /// engine gave up on (``givenUp()`` lists those with their reason and error), by the
    /// account they belonged to.
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
