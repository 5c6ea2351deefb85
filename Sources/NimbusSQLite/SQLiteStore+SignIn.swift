import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: SignInStore {
    public func signInSettings(container: String) async throws -> ContainerSignInSettings {
        try await pool.read { db in
            try Self.requireContainer(db, container)
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT passwords, redirect_origins, delete_public_records FROM container_signin WHERE container = ?",
                    arguments: [container])
            else { return ContainerSignInSettings() }
            return ContainerSignInSettings(
                passwords: row[0], redirectOrigins: Self.stringArray(row[1]), deletePublicRecords: row[2])
        }
    }

    public func setSignInSettings(_ settings: ContainerSignInSettings, container: String) async throws {
        try await pool.write { db in
            try Self.requireContainer(db, container)
            try db.execute(
                sql: """
                    INSERT INTO container_signin (container, passwords, redirect_origins, delete_public_records)
                    VALUES (?, ?, ?, ?)
                    ON CONFLICT(container) DO UPDATE SET passwords = excluded.passwords,
                        redirect_origins = excluded.redirect_origins, delete_public_records = excluded.delete_public_records
                    """,
                arguments: [
                    container, settings.passwords, JSON.array(settings.redirectOrigins.map(JSON.string)).serialized(),
                    settings.deletePublicRecords,
                ])
        }
    }

    public func login(issuer: String, subject: String) async throws -> UserLogin? {
        try await pool.read { db in try Self.login(db, issuer: issuer, subject: subject) }
    }

    public func registerPasswordLogin(email: String, passwordHash: String, now: Int64) async throws -> UserLogin {
        let subject = UserLogin.emailSubject(email)
        return try await pool.write { db in
            if let existing = try Self.login(db, issuer: UserLogin.emailIssuer, subject: subject) {
                guard existing.verifiedAt == nil else { return existing }
                try db.execute(
                    sql: "UPDATE user_logins SET password_hash = ? WHERE issuer = ? AND subject = ?",
                    arguments: [passwordHash, UserLogin.emailIssuer, subject])
                return UserLogin(
                    issuer: existing.issuer, subject: subject, userName: existing.userName, passwordHash: passwordHash,
                    verifiedAt: nil)
            }
            var userName = subject
            while try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE name = ?", arguments: [userName]) == true {
                userName = subject + "-" + RandomToken.hex(bytes: 3)
            }
            try db.execute(
                sql: "INSERT INTO users (name, email, created_at) VALUES (?, ?, ?)", arguments: [userName, email, now])
            try db.execute(
                sql: """
                    INSERT INTO user_logins (issuer, subject, user_name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [UserLogin.emailIssuer, subject, userName, passwordHash, now])
            return UserLogin(
                issuer: UserLogin.emailIssuer, subject: subject, userName: userName, passwordHash: passwordHash,
                verifiedAt: nil)
        }
    }

    public func setPassword(issuer: String, subject: String, passwordHash: String, now: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE user_logins SET password_hash = ?, verified_at = COALESCE(verified_at, ?)
                    WHERE issuer = ? AND subject = ?
                    """,
                arguments: [passwordHash, now, issuer, subject])
        }
    }

    public func markVerified(issuer: String, subject: String, now: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE user_logins SET verified_at = COALESCE(verified_at, ?) WHERE issuer = ? AND subject = ?",
                arguments: [now, issuer, subject])
        }
    }

    public func saveCode(hash: String, purpose: OneTimeCodePurpose, userName: String, expiresAt: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO one_time_codes (code_hash, purpose, user_name, expires_at) VALUES (?, ?, ?, ?)",
                arguments: [hash, purpose.rawValue, userName, expiresAt])
        }
    }

    public func consumeCode(hash: String, purpose: OneTimeCodePurpose, userName: String, now: Int64) async throws
        -> Bool
    {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE one_time_codes SET used_at = ?
                    WHERE code_hash = ? AND purpose = ? AND user_name = ? AND used_at IS NULL AND expires_at > ?
                    """,
                arguments: [now, hash, purpose.rawValue, userName, now])
            return db.changesCount > 0
        }
    }

    public func signIntoContainer(userName: String, container: String) async throws -> UserIdentity {
        try await pool.write { db in
            try Self.requireContainer(db, container)
            try db.execute(
                sql: "INSERT OR IGNORE INTO user_identities (user_name, container, record_name) VALUES (?, ?, ?)",
                arguments: [userName, container, "_" + RandomToken.hex(bytes: 16)])
            guard let user = try Self.identity(db, userName: userName, container: container) else {
                throw AccountError.noUser(userName)
            }
            return user
        }
    }

    // MARK: - Helpers

    static func login(_ db: Database, issuer: String, subject: String) throws -> UserLogin? {
        try Row.fetchOne(
            db,
            sql: "SELECT user_name, password_hash, verified_at FROM user_logins WHERE issuer = ? AND subject = ?",
            arguments: [issuer, subject]
        ).map { row in
            UserLogin(issuer: issuer, subject: subject, userName: row[0], passwordHash: row[1], verifiedAt: row[2])
        }
    }

    static func stringArray(_ text: String) -> [String] {
        (try? JSON.parse(Array(text.utf8)))?.array?.compactMap(\.string) ?? []
    }
}
