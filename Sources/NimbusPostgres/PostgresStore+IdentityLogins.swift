import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: IdentityLoginStore {
    /// Schema 12: the identity issuers each container accepts and the ID tokens already
    /// exchanged (kept until they expire, against replays), as SQLite's "v10-identity-logins".
    static let identityLoginsMigration = Migration(
        version: 12,
        statements: [
            """
            CREATE TABLE IF NOT EXISTS identity_issuers (
                container text COLLATE "C" NOT NULL REFERENCES containers(id),
                issuer text COLLATE "C" NOT NULL,
                audiences text[] NOT NULL,
                jwks_url text,
                PRIMARY KEY (container, issuer)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS identity_token_uses (
                token_id text COLLATE "C" PRIMARY KEY,
                expires_at bigint NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS identity_token_uses_by_expiry ON identity_token_uses (expires_at)",
        ])

    public func identityIssuers(container: String) async throws -> [IdentityIssuer] {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            return try await transaction.rows(
                """
                SELECT issuer, audiences, jwks_url FROM identity_issuers WHERE container = \(container) ORDER BY issuer
                """
            ).map { row in
                let (issuer, audiences, jwksURL) = try row.decode((String, [String], String?).self)
                return IdentityIssuer(issuer: issuer, audiences: audiences, jwksURL: jwksURL)
            }
        }
    }

    public func addIdentityIssuer(_ issuer: IdentityIssuer, container: String) async throws {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            try await transaction.rows(
                """
                INSERT INTO identity_issuers (container, issuer, audiences, jwks_url)
                VALUES (\(container), \(issuer.issuer), \(issuer.audiences), \(issuer.jwksURL))
                ON CONFLICT (container, issuer) DO UPDATE SET audiences = EXCLUDED.audiences, jwks_url = EXCLUDED.jwks_url
                """)
        }
    }

    public func removeIdentityIssuer(_ issuer: String, container: String) async throws -> Bool {
        try await !rows(
            """
            DELETE FROM identity_issuers WHERE container = \(container) AND issuer = \(issuer) RETURNING issuer
            """
        ).isEmpty
    }

    public func useIdentityToken(id: String, expiresAt: Int64, now: Int64) async throws -> Bool {
        try await transaction { transaction in
            try await transaction.rows("DELETE FROM identity_token_uses WHERE expires_at < \(now)")
            return try await !transaction.rows(
                """
                INSERT INTO identity_token_uses (token_id, expires_at) VALUES (\(id), \(expiresAt))
                ON CONFLICT (token_id) DO NOTHING RETURNING token_id
                """
            ).isEmpty
        }
    }

    public func linkIdentityLogin(
        issuer: String, subject: String, email: String?, verifiedEmail: String?, now: Int64
    ) async throws -> UserLogin {
        try await transaction { transaction in
            // One first sign-in of a subject at a time, across nodes.
            try await transaction.rows(
                "SELECT pg_advisory_xact_lock(\(Self.registrationLockKey), hashtext(\(issuer + " " + subject)))")
            if let existing = try await login(transaction, issuer: issuer, subject: subject) { return existing }
            var userName: String?
            if let verifiedEmail,
                let linked = try await login(
                    transaction, issuer: UserLogin.emailIssuer, subject: UserLogin.emailSubject(verifiedEmail)),
                linked.verifiedAt != nil
            {
                userName = linked.userName
            }
            if userName == nil {
                let base = email.map(UserLogin.emailSubject) ?? IdentityLoginNames.accountName(issuer: issuer, subject: subject)
                var candidate = base
                while try await !transaction.rows("SELECT 1 FROM users WHERE name = \(candidate)").isEmpty {
                    candidate = base + "-" + RandomToken.hex(bytes: 3)
                }
                try await transaction.rows(
                    "INSERT INTO users (name, email, created_at) VALUES (\(candidate), \(email), \(now))")
                userName = candidate
            }
            let name = userName ?? ""
            try await transaction.rows(
                """
                INSERT INTO user_logins (issuer, subject, user_name, verified_at, created_at)
                VALUES (\(issuer), \(subject), \(name), \(now), \(now))
                """)
            return UserLogin(issuer: issuer, subject: subject, userName: name, passwordHash: nil, verifiedAt: now)
        }
    }
}
