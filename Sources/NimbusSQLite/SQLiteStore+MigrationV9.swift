import GRDB
import NimbusStore

extension SQLiteStore {
    /// Schema v9 ("v9-sessions"): sessions, logins, one-time codes and containers' sign-in
    /// settings.
    ///
    /// Web auth tokens issued before sessions existed (rows of `tokens` of kind `web`) become
    /// sessions on the device "operator-issued", created when the token was issued, last seen
    /// `now` (so that none expires at once), revoked if it was; they leave `tokens`, which
    /// from now on holds API tokens only, and only their SHA-256 is kept.
    static func migrateV9Sessions(_ db: Database, now: Int64) throws {
        try db.execute(
            sql: """
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY,
                    token_hash TEXT NOT NULL UNIQUE,
                    user_name TEXT NOT NULL REFERENCES users(name),
                    container TEXT NOT NULL REFERENCES containers(id),
                    device_name TEXT NOT NULL,
                    platform TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    last_seen_at INTEGER NOT NULL,
                    revoked_at INTEGER
                );
                CREATE INDEX sessions_by_user ON sessions(user_name, container);
                CREATE TABLE user_logins (
                    issuer TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    user_name TEXT NOT NULL REFERENCES users(name),
                    password_hash TEXT,
                    verified_at INTEGER,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (issuer, subject)
                );
                CREATE INDEX user_logins_by_user ON user_logins(user_name);
                CREATE TABLE one_time_codes (
                    code_hash TEXT PRIMARY KEY,
                    purpose TEXT NOT NULL,
                    user_name TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    used_at INTEGER
                );
                CREATE TABLE container_signin (
                    container TEXT PRIMARY KEY REFERENCES containers(id),
                    passwords INTEGER NOT NULL DEFAULT 0,
                    redirect_origins TEXT NOT NULL DEFAULT '[]',
                    delete_public_records INTEGER NOT NULL DEFAULT 0
                );
                """)
        let legacy = try Row.fetchAll(
            db, sql: "SELECT token, container, user_name, created_at, revoked_at FROM tokens WHERE kind = 'web'")
        for row in legacy {
            let token: String = row[0]
            try db.execute(
                sql: """
                    INSERT INTO sessions
                        (id, token_hash, user_name, container, device_name, platform, created_at, last_seen_at, revoked_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    SessionToken.newID(), SessionToken.hash(token), row[2] as String, row[1] as String,
                    SessionDevice.operatorIssued.name, SessionDevice.operatorIssued.platform, row[3] as Int64,
                    max(now, row[3] as Int64), row[4] as Int64?,
                ])
        }
        try db.execute(sql: "DELETE FROM tokens WHERE kind = 'web'")
    }
}
