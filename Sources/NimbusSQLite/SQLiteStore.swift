import Foundation
import GRDB
import NimbusProtocol
import NimbusSQLiteBinding
import NimbusStore

/// The embedded engine: one SQLite file in WAL mode, zero configuration.
///
/// Writes go through GRDB's serialized writer, so the database version a commit allocates
/// is always greater than every version committed before it and readers (each in its own
/// WAL snapshot) can never skip a change. Another process (the `nimbus` CLI provisioning
/// users while the server runs) may open the same file; SQLite's locking and a busy
/// timeout keep them apart, and a token that process revokes is refused here once this
/// store's answer for it expires (``TokenLookupCache``, at most a second). Every read runs on GRDB's reader queues (`await pool.read`),
/// never on the calling task's thread: SQLite blocks its thread, and Swift's cooperative pool
/// has one thread per core.
public final class SQLiteStore: Sendable {
    /// The GRDB pool; `DatabasePool` is `Sendable`.
    let pool: DatabasePool
    /// The spans of traced changes, in a file of their own beside the store's
    /// (`nimbus-traces.sqlite`): writing them never waits for, nor holds up, a record write.
    let traces: DatabasePool
    /// Where the trace file is written: one thread under `SCHED_IDLE`, so that a write of spans
    /// yields a core the moment a request thread wakes on it.
    let traceWriter: LowPriorityThread
    /// Checkpoints the WAL off the commit path, on ``checkpointThread``, when ``polling`` asks.
    private let checkpointer: WALCheckpointer
    private let polling: WALPolling
    /// Where checkpoints run: at nice 19, so copying the log yields the cores to requests (a
    /// commit past ``WALCheckpointer/safetyPages`` is the backstop if it falls behind on a busy
    /// machine). Not `SCHED_IDLE`: beside a flood that keeps both cores busy, checkpoints then
    /// fell behind and a quiet user's p99 grew (docs/PERFORMANCE.md, "Tracing overhead",
    /// eighth round).
    private let checkpointThread: LowPriorityThread
    public let path: String
    /// Sync tokens, signed with the secret kept in the file.
    public let changeTokens: ChangeTokens
    /// What the store stamps rows with: zones' deletion, tokens, keys, subscriptions.
    public let clock: WallClock
    /// Token lookups answered lately; a commit to the tables they read ends them
    /// (``AccountTablesObserver``).
    let tokenLookups = TokenLookupCache()

    /// Opens (creating if needed) the store at `path` and migrates its schema.
    ///
    /// - Parameters:
    ///   - random: where the server secret comes from when the file has none yet.
    ///   - clock: the time of day the store stamps rows with (``WallClock/system`` by default).
    public convenience init(
        path: String, random: any RandomNumberGenerator = SystemRandomNumberGenerator(), clock: WallClock = .system
    ) throws {
        try self.init(path: path, random: random, clock: clock, preparingEachConnection: nil)
    }

    /// Opens the store, running `prepare` on each new connection after the store's own
    /// settings (tests use it to make statements observable).
    init(
        path: String, random: any RandomNumberGenerator = SystemRandomNumberGenerator(), clock: WallClock = .system,
        preparingEachConnection prepare: (@Sendable (Database) throws -> Void)?
    ) throws {
        let checkpointThread = LowPriorityThread(name: "nimbus-checkpoint", priority: .lowest)
        let checkpointer = WALCheckpointer(path: path) { job in
            Task { try? await checkpointThread.run(job) }
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // The checkpointer does it (asked by `WALPolling`); a commit checkpoints only if it
            // falls far behind.
            try WALCheckpointer.leaveCheckpoints(db)
            try prepare?(db)
        }
        self.path = path
        self.clock = clock
        let pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator(clock: clock).migrate(pool)
        pool.add(transactionObserver: AccountTablesObserver(cache: tokenLookups), extent: .databaseLifetime)
        var random = random
        self.changeTokens = ChangeTokens(
            secret: try Self.changeTokenSecret(
                pool, candidate: ChangeTokens.newSecret(using: &random), now: clock.nowMillis()))
        self.pool = pool
        self.traces = try Self.openTraces(besides: path)
        self.traceWriter = LowPriorityThread(name: "nimbus-traces", priority: .idle)
        self.checkpointer = checkpointer
        self.checkpointThread = checkpointThread
        self.polling = WALPolling(path: path, checkpointer: checkpointer)
    }

    /// Opens the store in a data directory (`DIR/nimbus.sqlite`), creating the directory.
    public convenience init(
        directory: String, random: any RandomNumberGenerator = SystemRandomNumberGenerator(), clock: WallClock = .system
    ) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try self.init(path: (directory as NSString).appendingPathComponent("nimbus.sqlite"), random: random, clock: clock)
    }

    /// A store dropped without ``close()`` still ends its log polling and its two threads (each
    /// thread holds itself).
    deinit {
        polling.stop()
        traceWriter.stop()
        checkpointThread.stop()
    }

    /// Closes the database files. Further use throws.
    public func close() throws {
        polling.stop()
        checkpointer.stop()
        checkpointThread.stop()
        traceWriter.stop()
        try pool.close()
        try traces.close()
    }

    static var migrator: DatabaseMigrator { migrator(clock: .system) }

    /// The migrations; `clock` is the time migrated web auth tokens are last seen at.
    static func migrator(clock: WallClock) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE databases (
                        id INTEGER PRIMARY KEY,
                        container TEXT NOT NULL,
                        environment TEXT NOT NULL,
                        scope TEXT NOT NULL,
                        owner TEXT NOT NULL,
                        version INTEGER NOT NULL DEFAULT 0,
                        zone_horizon INTEGER NOT NULL DEFAULT 0,
                        UNIQUE (container, environment, scope, owner)
                    );
                    CREATE TABLE zones (
                        db INTEGER NOT NULL REFERENCES databases(id),
                        name TEXT NOT NULL,
                        incarnation INTEGER NOT NULL,
                        change_version INTEGER NOT NULL,
                        meta_version INTEGER NOT NULL,
                        horizon INTEGER NOT NULL DEFAULT 0,
                        deleted INTEGER NOT NULL DEFAULT 0,
                        deleted_at INTEGER,
                        PRIMARY KEY (db, name)
                    ) WITHOUT ROWID;
                    CREATE INDEX zones_by_change ON zones(db, change_version);
                    CREATE INDEX zones_by_meta ON zones(db, meta_version);
                    CREATE TABLE records (
                        db INTEGER NOT NULL,
                        zone TEXT NOT NULL,
                        name TEXT NOT NULL,
                        type TEXT NOT NULL,
                        fields TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        created_by TEXT,
                        created_device TEXT,
                        modified_at INTEGER NOT NULL,
                        modified_by TEXT,
                        modified_device TEXT,
                        version INTEGER NOT NULL,
                        created_version INTEGER NOT NULL,
                        deleted INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (db, zone, name)
                    ) WITHOUT ROWID;
                    CREATE INDEX records_by_version ON records(db, zone, version);
                    CREATE INDEX records_tombstones ON records(deleted, modified_at) WHERE deleted = 1;
                    CREATE TABLE record_refs (
                        db INTEGER NOT NULL,
                        zone TEXT NOT NULL,
                        target TEXT NOT NULL,
                        source TEXT NOT NULL,
                        PRIMARY KEY (db, zone, target, source)
                    ) WITHOUT ROWID;
                    CREATE INDEX record_refs_by_source ON record_refs(db, zone, source);

                    CREATE TABLE containers (
                        id TEXT PRIMARY KEY,
                        created_at INTEGER NOT NULL
                    );
                    CREATE TABLE users (
                        name TEXT PRIMARY KEY,
                        email TEXT,
                        first_name TEXT,
                        last_name TEXT,
                        created_at INTEGER NOT NULL
                    );
                    CREATE TABLE user_identities (
                        user_name TEXT NOT NULL REFERENCES users(name),
                        container TEXT NOT NULL REFERENCES containers(id),
                        record_name TEXT NOT NULL UNIQUE,
                        PRIMARY KEY (user_name, container)
                    );
                    CREATE TABLE tokens (
                        token TEXT PRIMARY KEY,
                        kind TEXT NOT NULL,
                        container TEXT NOT NULL REFERENCES containers(id),
                        user_name TEXT,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER
                    );
                    CREATE TABLE server_keys (
                        key_id TEXT PRIMARY KEY,
                        container TEXT NOT NULL REFERENCES containers(id),
                        public_key_pem TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER
                    );
                    """)
        }
        migrator.registerMigration("v2", migrate: migrateV2)
        migrator.registerMigration("v3-discoverability") { db in
            // Users opt in to discovery per container (CloudKit's user discoverability).
            try db.execute(
                sql: """
                    ALTER TABLE user_identities ADD COLUMN discoverable INTEGER NOT NULL DEFAULT 0;
                    CREATE INDEX users_by_email ON users(lower(email));
                    """)
        }
        migrator.registerMigration("v4-query", migrate: migrateV4)
        migrator.registerMigration("v5-server-secret", migrate: migrateV5)
        migrator.registerMigration("v6-repair-values", migrate: migrateV6RepairValues)
        migrator.registerMigration("v7-assets", migrate: migrateV7Assets)
        migrator.registerMigration("v8-usage", migrate: migrateV8Usage)
        migrator.registerMigration("v9-sessions") { db in try migrateV9Sessions(db, now: clock.nowMillis()) }
        migrator.registerMigration("v10-identity-logins", migrate: migrateV10IdentityLogins)
        migrator.registerMigration("v11-operators", migrate: migrateV11Operators)
        migrator.registerMigration("v12-throttle-settings", migrate: migrateV12ThrottleSettings)
        migrator.registerMigration("v13-zone-query-indexes", migrate: migrateV13ZoneQueryIndexes)
        migrator.registerMigration("v14-records-in-write-order", migrate: migrateV14RecordsInWriteOrder)
        return migrator
    }
}

extension SQLiteStore {
    /// The id and version of a database, or `nil` if it was never written.
    static func databaseRow(_ db: Database, _ key: DatabaseKey) throws -> (id: Int64, version: Int64, zoneHorizon: Int64)? {
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT id, version, zone_horizon FROM databases WHERE container = ? AND environment = ? AND scope = ? AND owner = ?"),
            arguments: [key.container, key.environment.rawValue, key.scope.rawValue, key.owner])
        return row.map { ($0[0], $0[1], $0[2]) }
    }

    /// The id and version of a database, creating it (with its default zone) on first use.
    static func ensureDatabase(_ db: Database, _ key: DatabaseKey) throws -> (id: Int64, version: Int64) {
        if let existing = try databaseRow(db, key) { return (existing.id, existing.version) }
        try db.execute(
            sql: "INSERT INTO databases (container, environment, scope, owner) VALUES (?, ?, ?, ?)",
            arguments: [key.container, key.environment.rawValue, key.scope.rawValue, key.owner])
        let id = db.lastInsertedRowID
        try db.execute(
            sql: "INSERT INTO zones (db, name, incarnation, change_version, meta_version) VALUES (?, ?, 0, 0, 0)",
            arguments: [id, ZoneID.defaultZoneName])
        return (id, 0)
    }

    static func setVersion(_ db: Database, database: Int64, version: Int64) throws {
        // Prepared once per connection: it runs in every write.
        try db.cachedStatement(sql: "UPDATE databases SET version = ? WHERE id = ?")
            .execute(arguments: [version, database])
    }
}

extension SQLiteStore: NimbusStorage {
    public var engineName: String { "sqlite" }

    /// One file, one server process: there are no other nodes.
    public func remoteNotifications() -> AsyncStream<[StoredNotification]> {
        AsyncStream { $0.finish() }
    }

    public func shutdown() async throws {
        try close()
    }
}
