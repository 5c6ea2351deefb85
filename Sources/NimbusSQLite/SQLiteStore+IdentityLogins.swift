import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore {
    /// Schema v10 ("v10-identity-logins"): the identity issuers each container accepts and the
    /// ID tokens already exchanged (kept until they expire, against replays).
    static func migrateV10IdentityLogins(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE identity_issuers (
                    container TEXT NOT NULL REFERENCES containers(id),
                    issuer TEXT NOT NULL,
                    audiences TEXT NOT NULL,
                    jwks_url TEXT,
                    PRIMARY KEY (container, issuer)
                );
                CREATE TABLE identity_token_uses (
                    token_id TEXT PRIMARY KEY,
                    expires_at INTEGER NOT NULL
                );
                CREATE INDEX identity_token_uses_by_expiry ON identity_token_uses(expires_at);
                """)
    }

    public func identityIssuers(container: String) async throws -> [IdentityIssuer] {
        try await pool.read { db in
            try Self.requireContainer(db, container)
            return try Row.fetchAll(
                db, sql: "SELECT issuer, audiences, jwks_url FROM identity_issuers WHERE container = ? ORDER BY issuer",
                arguments: [container]
            ).map { row in IdentityIssuer(issuer: row[0], audiences: Self.stringArray(row[1]), jwksURL: row[2]) }
        }
    }

    public func addIdentityIssuer(_ issuer: IdentityIssuer, container: String) async throws {
        try await pool.write { db in
            try Self.requireContainer(db, container)
            try db.execute(
                sql: """
                    INSERT INTO identity_issuers (container, issuer, audiences, jwks_url) VALUES (?, ?, ?, ?)
                    ON CONFLICT(container, issuer) DO UPDATE SET audiences = excluded.audiences, jwks_url = excluded.jwks_url
                    """,
                arguments: [
                    container, issuer.issuer, JSON.array(issuer.audiences.map(JSON.string)).serialized(), issuer.jwksURL,
                ])
        }
    }

    public func removeIdentityIssuer(_ issuer: String, container: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM identity_issuers WHERE container = ? AND issuer = ?", arguments: [container, issuer])
            return db.changesCount > 0
        }
    }

    public func useIdentityToken(id: String, expiresAt: Int64, now: Int64) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM identity_token_uses WHERE expires_at < ?", arguments: [now])
            try db.execute(
                sql: "INSERT OR IGNORE INTO identity_token_uses (token_id, expires_at) VALUES (?, ?)",
                arguments: [id, expiresAt])
            return db.changesCount > 0
        }
    }

    public func linkIdentityLogin(
        issuer: String, subject: String, email: String?, verifiedEmail: String?, now: Int64
    ) async throws -> UserLogin {
        try await pool.write { db in
            if let existing = try Self.login(db, issuer: issuer, subject: subject) { return existing }
            var userName: String?
            if let verifiedEmail,
                let linked = try Self.login(db, issuer: UserLogin.emailIssuer, subject: UserLogin.emailSubject(verifiedEmail)),
                linked.verifiedAt != nil
            {
                userName = linked.userName
            }
            if userName == nil {
                let base = email.map(UserLogin.emailSubject) ?? IdentityLoginNames.accountName(issuer: issuer, subject: subject)
                var candidate = base
                while try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE name = ?", arguments: [candidate]) == true {
                    candidate = base + "-" + RandomToken.hex(bytes: 3)
                }
                try db.execute(
                    sql: "INSERT INTO users (name, email, created_at) VALUES (?, ?, ?)", arguments: [candidate, email, now])
                userName = candidate
            }
            let name = userName ?? ""
            try db.execute(
                sql: "INSERT INTO user_logins (issuer, subject, user_name, verified_at, created_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [issuer, subject, name, now, now])
            return UserLogin(issuer: issuer, subject: subject, userName: name, passwordHash: nil, verifiedAt: now)
        }
    }
}
