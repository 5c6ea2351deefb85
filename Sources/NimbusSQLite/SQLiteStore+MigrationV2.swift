import GRDB
import NimbusStore

extension SQLiteStore {
    /// Schema v2: subscriptions, the per-user notification collection, device cursors and
    /// web push tokens.
    static func migrateV2(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE subscriptions (
                    db INTEGER NOT NULL REFERENCES databases(id),
                    owner TEXT NOT NULL,
                    id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    zone TEXT,
                    record_type TEXT,
                    definition TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (db, owner, id)
                ) WITHOUT ROWID;
                CREATE INDEX subscriptions_by_type ON subscriptions(db, record_type);

                CREATE TABLE notification_users (
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    user TEXT NOT NULL,
                    last_seq INTEGER NOT NULL DEFAULT 0,
                    horizon INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (container, environment, user)
                ) WITHOUT ROWID;
                CREATE TABLE notifications (
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    user TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    created_seq INTEGER NOT NULL,
                    id TEXT NOT NULL,
                    subscription TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    zone TEXT,
                    zone_owner TEXT,
                    record_name TEXT,
                    reason INTEGER,
                    origin_user TEXT,
                    origin_device TEXT,
                    payload TEXT NOT NULL,
                    is_read INTEGER NOT NULL DEFAULT 0,
                    badges INTEGER NOT NULL DEFAULT 0,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (container, environment, user, seq)
                ) WITHOUT ROWID;
                CREATE UNIQUE INDEX notifications_by_id ON notifications(id);
                CREATE INDEX notifications_by_creation ON notifications(container, environment, user, created_seq);
                CREATE INDEX notifications_by_age ON notifications(created_at);
                CREATE INDEX notifications_unread_badges ON notifications(container, environment, user)
                    WHERE is_read = 0 AND badges = 1;

                CREATE TABLE push_devices (
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    user TEXT NOT NULL,
                    device TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    last_seen INTEGER NOT NULL,
                    PRIMARY KEY (container, environment, user, device)
                ) WITHOUT ROWID;
                CREATE TABLE push_tokens (
                    token TEXT PRIMARY KEY,
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    user TEXT NOT NULL,
                    apns_environment TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    registered_at INTEGER
                ) WITHOUT ROWID;
                """)
    }
}
