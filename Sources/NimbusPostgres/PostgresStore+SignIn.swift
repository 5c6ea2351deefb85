import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: SignInStore {
    public func signInSettings(container: String) async throws -> ContainerSignInSettings {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            guard
                let row = try await transaction.rows(
                    """
                    SELECT passwords, redirect_origins, delete_public_records FROM container_signin
                    WHERE container = \(container)
                    """
                ).first
            else { return ContainerSignInSettings() }
            let (passwords, origins, deletePublic) = try row.decode((Bool, [String], Bool).self)
            return ContainerSignInSettings(passwords: passwords, redirectOrigins: origins, deletePublicRecords: deletePublic)
        }
    }

    public func setSignInSettings(_ settings: ContainerSignInSettings, container: String) async throws {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            try await transaction.rows(
                """
                INSERT INTO container_signin (container, passwords, redirect_origins, delete_public_records)
                VALUES (\(container), \(settings.passwords), \(settings.redirectOrigins), \(settings.deletePublicRecords))
                ON CONFLICT (container) DO UPDATE SET passwords = EXCLUDED.passwords,
                    redirect_origins = EXCLUDED.redirect_origins, delete_public_records = EXCLUDED.delete_public_records
                """)
        }
    }

    public func login(issuer: String, subject: String) async throws -> UserLogin? {
        try await transaction { transaction in try await login(transaction, issuer: issuer, subject: subject) }
    }

    public func registerPasswordLogin(email: String, passwordHash: String, now: Int64) async throws -> UserLogin {
        let subject = UserLogin.emailSubject(email)
        let issuer = UserLogin.emailIssuer
        return try await transaction { transaction in
            // One registration of an address at a time, across nodes.
            try await transaction.rows(
                "SELECT pg_advisory_xact_lock(\(Self.registrationLockKey), hashtext(\(subject)))")
            if let existing = try await login(transaction, issuer: issuer, subject: subject) {
                guard existing.verifiedAt == nil else { return existing }
                try await transaction.rows(
                    """
                    UPDATE user_logins SET password_hash = \(passwordHash)
                    WHERE issuer = \(issuer) AND subject = \(subject)
                    """)
                return UserLogin(
                    issuer: issuer, subject: subject, userName: existing.userName, passwordHash: passwordHash,
                    verifiedAt: nil)
            }
            var userName = subject
            while try await !transaction.rows("SELECT 1 FROM users WHERE name = \(userName)").isEmpty {
                userName = subject + "-" + RandomToken.hex(bytes: 3)
            }
            try await transaction.rows(
                "INSERT INTO users (name, email, created_at) VALUES (\(userName), \(email), \(now))")
            try await transaction.rows(
                """
                INSERT INTO user_logins (issuer, subject, user_name, password_hash, created_at)
                VALUES (\(issuer), \(subject), \(userName), \(passwordHash), \(now))
                """)
            return UserLogin(
                issuer: issuer, subject: subject, userName: userName, passwordHash: passwordHash, verifiedAt: nil)
        }
    }

    public func setPassword(issuer: String, subject: String, passwordHash: String, now: Int64) async throws {
        try await rows(
            """
            UPDATE user_logins SET password_hash = \(passwordHash), verified_at = COALESCE(verified_at, \(now))
            WHERE issuer = \(issuer) AND subject = \(subject)
            """)
    }

    public func markVerified(issuer: String, subject: String, now: Int64) async throws {
        try await rows(
            """
            UPDATE user_logins SET verified_at = COALESCE(verified_at, \(now))
            WHERE issuer = \(issuer) AND subject = \(subject)
            """)
    }

    public func saveCode(hash: String, purpose: OneTimeCodePurpose, userName: String, expiresAt: Int64) async throws {
        try await rows(
            """
            INSERT INTO one_time_codes (code_hash, purpose, user_name, expires_at)
            VALUES (\(hash), \(purpose.rawValue), \(userName), \(expiresAt))
            """)
    }

    public func consumeCode(hash: String, purpose: OneTimeCodePurpose, userName: String, now: Int64) async throws
        -> Bool
    {
        try await !rows(
            """
            UPDATE one_time_codes SET used_at = \(now)
            WHERE code_hash = \(hash) AND purpose = \(purpose.rawValue) AND user_name = \(userName)
              AND used_at IS NULL AND expires_at > \(now)
            RETURNING code_hash
            """
        ).isEmpty
    }

    public func signIntoContainer(userName: String, container: String) async throws -> UserIdentity {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            try await transaction.rows(
                """
                INSERT INTO user_identities (user_name, container, record_name)
                VALUES (\(userName), \(container), \("_" + RandomToken.hex(bytes: 16)))
                ON CONFLICT (user_name, container) DO NOTHING
                """)
            guard let user = try await identity(transaction, userName: userName, container: container) else {
                throw AccountError.noUser(userName)
            }
            return user
        }
    }

    /// The first key of the advisory lock that serialises registrations of one address ("nsig").
    static let registrationLockKey: Int32 = 0x6E73_6967

    func login(_ transaction: Transaction, issuer: String, subject: String) async throws -> UserLogin? {
        try await transaction.rows(
            """
            SELECT user_name, password_hash, verified_at FROM user_logins
            WHERE issuer = \(issuer) AND subject = \(subject)
            """
        ).first.map { row in
            let (userName, hash, verifiedAt) = try row.decode((String, String?, Int64?).self)
            return UserLogin(issuer: issuer, subject: subject, userName: userName, passwordHash: hash, verifiedAt: verifiedAt)
        }
    }
}
