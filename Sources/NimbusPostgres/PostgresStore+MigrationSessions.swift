import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// Schema 11: sessions, logins, one-time codes and containers' sign-in settings, as
    /// SQLite's `v9-sessions`. Web auth tokens issued before sessions existed become sessions
    /// on the device "operator-issued" (only their SHA-256 kept, last seen at the migration) and
    /// leave `tokens`. Written to
    /// be run again over itself (`IF NOT EXISTS`), as a database whose recorded versions were
    /// rolled back needs.
    static let sessionsMigration = Migration(
        version: 11, statements: sessionsSchema, step: { store, transaction in try await store.moveWebTokens(transaction) })

    static let sessionsSchema = [
        """
        CREATE TABLE IF NOT EXISTS sessions (
            id text COLLATE "C" PRIMARY KEY,
            token_hash text COLLATE "C" NOT NULL UNIQUE,
            user_name text COLLATE "C" NOT NULL REFERENCES users(name),
            container text COLLATE "C" NOT NULL REFERENCES containers(id),
            device_name text NOT NULL,
            platform text NOT NULL,
            created_at bigint NOT NULL,
            last_seen_at bigint NOT NULL,
            revoked_at bigint
        )
        """,
        "CREATE INDEX IF NOT EXISTS sessions_by_user ON sessions(user_name, container)",
        """
        CREATE TABLE IF NOT EXISTS user_logins (
            issuer text COLLATE "C" NOT NULL,
            subject text COLLATE "C" NOT NULL,
            user_name text COLLATE "C" NOT NULL REFERENCES users(name),
            password_hash text,
            verified_at bigint,
            created_at bigint NOT NULL,
            PRIMARY KEY (issuer, subject)
        )
        """,
        "CREATE INDEX IF NOT EXISTS user_logins_by_user ON user_logins(user_name)",
        """
        CREATE TABLE IF NOT EXISTS one_time_codes (
            code_hash text COLLATE "C" PRIMARY KEY,
            purpose text NOT NULL,
            user_name text COLLATE "C" NOT NULL,
            expires_at bigint NOT NULL,
            used_at bigint
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS container_signin (
            container text COLLATE "C" PRIMARY KEY REFERENCES containers(id),
            passwords boolean NOT NULL DEFAULT false,
            redirect_origins text[] NOT NULL DEFAULT '{}',
            delete_public_records boolean NOT NULL DEFAULT false
        )
        """,
    ]

    /// Moves the `web` rows of `tokens` into `sessions`, hashed.
    func moveWebTokens(_ transaction: Transaction) async throws {
        let legacy = try await transaction.rows(
            "SELECT token, container, user_name, created_at, revoked_at FROM tokens WHERE kind = 'web'")
        for row in legacy {
            let (token, container, userName, createdAt, revokedAt) = try row.decode(
                (String, String, String, Int64, Int64?).self)
            let device = SessionDevice.operatorIssued
            // Last seen at the migration, so that no token expires at once.
            let seen = max(clock.nowMillis(), createdAt)
            try await transaction.rows(
                """
                INSERT INTO sessions
                    (id, token_hash, user_name, container, device_name, platform, created_at, last_seen_at, revoked_at)
                VALUES (\(SessionToken.newID()), \(SessionToken.hash(token)), \(userName), \(container), \(device.name),
                    \(device.platform), \(createdAt), \(seen), \(revokedAt))
                """)
        }
        try await transaction.rows("DELETE FROM tokens WHERE kind = 'web'")
    }
}
