import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// One step of the schema: its version and the statements that take a database there.
    struct Migration: Sendable {
        var version: Int
        var statements: [String]
        /// Work the statements cannot express, run after them in the same transaction.
        var step: (@Sendable (PostgresStore, Transaction) async throws -> Void)? = nil
    }

    /// The newest schema version this build knows.
    public static var newestSchemaVersion: Int { migrations[migrations.count - 1].version }

    /// Brings the schema up to ``newestSchemaVersion``.
    ///
    /// Runs in one transaction under a transaction-scoped advisory lock keyed by the schema
    /// name, so nodes starting together take turns: the first migrates, the others find the
    /// work done. `nimbus_schema_version` records each applied version. A schema newer than
    /// this build refuses to open rather than let an old node write rows a newer one would
    /// misread.
    func migrate() async throws {
        try await transaction { transaction in
            try await transaction.rows(
                "SELECT pg_advisory_xact_lock(\(Self.migrationLockKey), hashtext(\(self.schema)))")
            let exists = try await transaction.rows(
                "SELECT 1 FROM pg_namespace WHERE nspname = \(self.schema)"
            )
            if exists.isEmpty {
                try await transaction.rows(PostgresQuery(unsafeSQL: "CREATE SCHEMA \"\(self.schema)\""))
            }
            try await transaction.rows(
                """
                CREATE TABLE IF NOT EXISTS nimbus_schema_version (
                    version integer PRIMARY KEY,
                    applied_at bigint NOT NULL
                )
                """)
            let current = try await transaction.rows(
                "SELECT COALESCE(max(version), 0)::int8 FROM nimbus_schema_version"
            ).first.map { try $0.decode(Int64.self) } ?? 0
            guard current <= Int64(Self.newestSchemaVersion) else {
                throw PostgresStoreError(
                    .schemaTooNew,
                    "the database schema is at version \(current) but this nimbus knows versions up to "
                        + "\(Self.newestSchemaVersion): upgrade nimbus on this node (or point it at another database)")
            }
            for migration in Self.migrations where migration.version > current {
                for statement in migration.statements {
                    try await transaction.rows(PostgresQuery(unsafeSQL: statement))
                }
                if let step = migration.step { try await step(self, transaction) }
                // When the database's schema really changed, for operators reading the table:
                // the system clock, not the injected one (no behaviour depends on it).
                try await transaction.rows(
                    """
                    INSERT INTO nimbus_schema_version (version, applied_at)
                    VALUES (\(migration.version), \(WallClock.system.nowMillis()))
                    """)
                self.logger.info("postgres schema migrated", metadata: ["version": "\(migration.version)"])
            }
        }
    }

    /// The first key of the migration advisory lock ("nimb" in ASCII); the second is the
    /// schema name's hash.
    static let migrationLockKey: Int32 = 0x6E69_6D62

    static let migrations: [Migration] = [
        Migration(version: 1, statements: recordsSchema + accountsSchema),
        Migration(version: 2, statements: notificationsSchema),
        Migration(version: 3, statements: discoverabilitySchema),
        Migration(version: 4, statements: querySchema),
        Migration(version: 5, statements: versionIndexOnlyForFeeds),
        Migration(version: 6, statements: writtenRecords),
        Migration(version: 7, statements: serverSecrets),
        Migration(version: 8, statements: [], step: { store, transaction in try await store.repairUnreadableValues(transaction) }),
        Migration(version: 9, statements: assetsSchema),
        Migration(version: 10, statements: usageSchema),
        sessionsMigration,
        identityLoginsMigration,
        operatorsMigration,
        throttleSettingsMigration,
        traceSpansMigration,
        accountTriggersMigration,
        zoneQueryIndexesMigration,
    ]

    /// Schema 17: the query indexes' entries also in zone order, so a query in one zone reads
    /// only its own entries (SQLite's `v13-zone-query-indexes` says why).
    static let zoneQueryIndexesMigration = Migration(
        version: 17,
        statements: [
            "CREATE INDEX IF NOT EXISTS record_values_by_zone ON record_values (db, type, field, zone, kind, num, txt, name)",
            "CREATE INDEX IF NOT EXISTS record_tokens_by_zone ON record_tokens (db, type, token, zone, name, field)",
        ])

    /// The server's secrets (`change-tokens` signs sync tokens: ``ChangeTokens``), created
    /// once by the first node that needs one and read by every other, and web push tokens
    /// only as issued: rows an earlier release inserted for a token a client registered
    /// without `tokens/create` (`registered_at = created_at`) are removed, as in SQLite's
    /// `v5-server-secret`.
    private static let serverSecrets = [
        """
        CREATE TABLE server_secrets (
            name text COLLATE "C" PRIMARY KEY,
            secret bytea NOT NULL,
            created_at bigint NOT NULL
        )
        """,
        "DELETE FROM push_tokens WHERE registered_at = created_at",
    ]

    /// A record's wire form around its fields (``StoredRecord/wireHead``,
    /// ``StoredRecord/wireTail``), written with the record, so a change feed page is joined
    /// without the node decoding a column of it; `wire_version` is the `version` they were
    /// written for. A row whose `wire_version` is not its `version` — written before this
    /// schema version, or since by a node of an older release that does not know these
    /// columns (nodes are replaced one by one) — is decoded instead. Adding nullable columns
    /// rewrites no row.
    private static let writtenRecords = [
        "ALTER TABLE records ADD COLUMN wire_head text, ADD COLUMN wire_tail text, ADD COLUMN wire_version bigint"
    ]

    /// The change-feed index `(db, zone, version)` shares its leading columns with the
    /// primary key `(db, zone, name)`. On a young table (no statistics yet: a new deployment,
    /// a zone filling fast) the planner then costs both alike and may read the rows of a
    /// modify (`name = ANY(…)`) by scanning the whole zone through the version index: each
    /// write gets slower as the zone grows. Made partial on `version > 0` (every version is),
    /// the index is used only by queries that say `version > 0` — the feed — and every lookup
    /// by name takes the primary key whatever the statistics.
    private static let versionIndexOnlyForFeeds = [
        "DROP INDEX records_by_version",
        "CREATE INDEX records_by_version ON records (db, zone, version) WHERE version > 0",
    ]

    /// Users opt in to discovery per container (CloudKit's user discoverability); discovery
    /// compares email addresses ignoring ASCII case, as SQLite's `lower()` does.
    private static let discoverabilitySchema = [
        "ALTER TABLE user_identities ADD COLUMN discoverable boolean NOT NULL DEFAULT false",
        #"CREATE INDEX users_by_email ON users ((lower(email COLLATE "C")))"#,
    ]

    /// The schemas of container environments and the query index entries (see
    /// ``IndexLayout``). A value-index key is `(kind, num, txt)`: kind 0 a number (exact, as
    /// `numeric`), 1 a text, 2 the missing key, so keys order as ``IndexValue`` orders them;
    /// text columns use the "C" collation (byte order, as SQLite). Both index tables are
    /// ordered as scans read them; `zone` leads no key, so deleting a zone's entries scans the
    /// database's entries.
    private static let querySchema = [
        """
        CREATE TABLE schemas (
            container text COLLATE "C" NOT NULL,
            environment text COLLATE "C" NOT NULL,
            version bigint NOT NULL,
            document text NOT NULL,
            PRIMARY KEY (container, environment)
        )
        """,
        """
        CREATE TABLE schema_indexes (
            container text COLLATE "C" NOT NULL,
            environment text COLLATE "C" NOT NULL,
            type text COLLATE "C" NOT NULL,
            kind text COLLATE "C" NOT NULL,
            field text COLLATE "C" NOT NULL,
            PRIMARY KEY (container, environment, type, kind, field)
        )
        """,
        """
        CREATE TABLE record_values (
            db bigint NOT NULL,
            type text COLLATE "C" NOT NULL,
            field text COLLATE "C" NOT NULL,
            kind smallint NOT NULL,
            num numeric NOT NULL,
            txt text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            zone text COLLATE "C" NOT NULL,
            PRIMARY KEY (db, type, field, kind, num, txt, name, zone)
        )
        """,
        """
        CREATE TABLE record_tokens (
            db bigint NOT NULL,
            type text COLLATE "C" NOT NULL,
            token text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            zone text COLLATE "C" NOT NULL,
            field text COLLATE "C" NOT NULL,
            PRIMARY KEY (db, type, token, name, zone, field)
        )
        """,
    ]

    /// Databases, zones, records and the `DELETE_SELF` index. Key columns use the "C"
    /// collation: byte order, as in SQLite, and the cheapest comparisons.
    private static let recordsSchema = [
        """
        CREATE TABLE databases (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            container text COLLATE "C" NOT NULL,
            environment text COLLATE "C" NOT NULL,
            scope text COLLATE "C" NOT NULL,
            owner text COLLATE "C" NOT NULL,
            version bigint NOT NULL DEFAULT 0,
            zone_horizon bigint NOT NULL DEFAULT 0,
            UNIQUE (container, environment, scope, owner)
        )
        """,
        """
        CREATE TABLE zones (
            db bigint NOT NULL REFERENCES databases(id),
            name text COLLATE "C" NOT NULL,
            incarnation bigint NOT NULL,
            change_version bigint NOT NULL,
            meta_version bigint NOT NULL,
            horizon bigint NOT NULL DEFAULT 0,
            deleted boolean NOT NULL DEFAULT false,
            deleted_at bigint,
            PRIMARY KEY (db, name)
        )
        """,
        "CREATE INDEX zones_by_change ON zones (db, change_version)",
        "CREATE INDEX zones_by_meta ON zones (db, meta_version)",
        """
        CREATE TABLE records (
            db bigint NOT NULL,
            zone text COLLATE "C" NOT NULL,
            name text COLLATE "C" NOT NULL,
            type text NOT NULL,
            fields text NOT NULL,
            created_at bigint NOT NULL,
            created_by text,
            created_device text,
            modified_at bigint NOT NULL,
            modified_by text,
            modified_device text,
            version bigint NOT NULL,
            created_version bigint NOT NULL,
            deleted boolean NOT NULL DEFAULT false,
            PRIMARY KEY (db, zone, name)
        )
        """,
        "CREATE INDEX records_by_version ON records (db, zone, version)",
        "CREATE INDEX records_tombstones ON records (modified_at) WHERE deleted",
        """
        CREATE TABLE record_refs (
            db bigint NOT NULL,
            zone text COLLATE "C" NOT NULL,
            target text COLLATE "C" NOT NULL,
            source text COLLATE "C" NOT NULL,
            PRIMARY KEY (db, zone, target, source)
        )
        """,
        "CREATE INDEX record_refs_by_source ON record_refs (db, zone, source)",
    ]

    /// Containers, users, tokens and server-to-server keys.
    private static let accountsSchema = [
        "CREATE TABLE containers (id text COLLATE \"C\" PRIMARY KEY, created_at bigint NOT NULL)",
        """
        CREATE TABLE users (
            name text COLLATE "C" PRIMARY KEY,
            email text,
            first_name text,
            last_name text,
            created_at bigint NOT NULL
        )
        """,
        """
        CREATE TABLE user_identities (
            user_name text COLLATE "C" NOT NULL REFERENCES users(name),
            container text COLLATE "C" NOT NULL REFERENCES containers(id),
            record_name text COLLATE "C" NOT NULL UNIQUE,
            PRIMARY KEY (user_name, container)
        )
        """,
        """
        CREATE TABLE tokens (
            token text COLLATE "C" PRIMARY KEY,
            kind text NOT NULL,
            container text COLLATE "C" NOT NULL REFERENCES containers(id),
            user_name text COLLATE "C",
            created_at bigint NOT NULL,
            revoked_at bigint
        )
        """,
        """
        CREATE TABLE server_keys (
            key_id text COLLATE "C" PRIMARY KEY,
            container text COLLATE "C" NOT NULL REFERENCES containers(id),
            public_key_pem text NOT NULL,
            created_at bigint NOT NULL,
            revoked_at bigint
        )
        """,
    ]

    /// Subscriptions, the per-user notification collection, device cursors and web push tokens.
    private static let notificationsSchema = [
        """
        CREATE TABLE subscriptions (
            db bigint NOT NULL REFERENCES databases(id),
            owner text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            kind text NOT NULL,
            zone text COLLATE "C",
            record_type text COLLATE "C",
            definition text NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (db, owner, id)
        )
        """,
        "CREATE INDEX subscriptions_by_type ON subscriptions (db, record_type)",
        """
        CREATE TABLE notification_users (
            container text COLLATE "C" NOT NULL,
            environment text COLLATE "C" NOT NULL,
            recipient text COLLATE "C" NOT NULL,
            last_seq bigint NOT NULL DEFAULT 0,
            horizon bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (container, environment, recipient)
        )
        """,
        """
        CREATE TABLE notifications (
            container text COLLATE "C" NOT NULL,
            environment text COLLATE "C" NOT NULL,
            recipient text COLLATE "C" NOT NULL,
            seq bigint NOT NULL,
            created_seq bigint NOT NULL,
            id text COLLATE "C" NOT NULL,
            subscription text NOT NULL,
            kind text NOT NULL,
            scope text NOT NULL,
            zone text,
            zone_owner text,
            record_name text,
            reason integer,
            origin_user text,
            origin_device text,
            payload text NOT NULL,
            is_read boolean NOT NULL DEFAULT false,
            badges boolean NOT NULL DEFAULT false,
            created_at bigint NOT NULL,
            PRIMARY KEY (container, environment, recipient, seq)
        )
        """,
        "CREATE UNIQUE INDEX notifications_by_id ON notifications (id)",
        "CREATE INDEX notifications_by_creation ON notifications (container, environment, recipient, created_seq)",
        "CREATE INDEX notifications_by_age ON notifications (created_at)",
        """
        CREATE INDEX notifications_unread_badges ON notifications (container, environment, recipient)
            WHERE NOT is_read AND badges
        """,
        """
        CREATE TABLE push_devices (
            container text COLLATE "C" NOT NULL,
            environment text COLLATE "C" NOT NULL,
            recipient text COLLATE "C" NOT NULL,
            device text COLLATE "C" NOT NULL,
            seq bigint NOT NULL,
            last_seen bigint NOT NULL,
            PRIMARY KEY (container, environment, recipient, device)
        )
        """,
        """
        CREATE TABLE push_tokens (
            token text COLLATE "C" PRIMARY KEY,
            container text COLLATE "C" NOT NULL,
            environment text COLLATE "C" NOT NULL,
            recipient text COLLATE "C" NOT NULL,
            apns_environment text NOT NULL,
            created_at bigint NOT NULL,
            registered_at bigint
        )
        """,
    ]
}
