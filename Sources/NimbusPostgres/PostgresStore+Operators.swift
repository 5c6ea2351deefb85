import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: OperatorStore {
    /// Schema 13: the dashboard's operators, their sessions (token hashes), the audit log, and
    /// each container's operator settings, as SQLite's "v11-operators". Re-runnable.
    static let operatorsMigration = Migration(
        version: 13,
        statements: [
            """
            CREATE TABLE IF NOT EXISTS operators (
                name text COLLATE "C" PRIMARY KEY,
                password_hash text NOT NULL,
                created_at bigint NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS operator_sessions (
                token_hash text COLLATE "C" PRIMARY KEY,
                operator text COLLATE "C" NOT NULL REFERENCES operators(name) ON DELETE CASCADE,
                csrf_token text NOT NULL,
                created_at bigint NOT NULL,
                expires_at bigint NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS operator_sessions_by_expiry ON operator_sessions (expires_at)",
            """
            CREATE TABLE IF NOT EXISTS operator_audit (
                id bigserial PRIMARY KEY,
                at bigint NOT NULL,
                operator text NOT NULL,
                action text NOT NULL,
                container text NOT NULL,
                detail text NOT NULL
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS container_operator_settings (
                container text COLLATE "C" PRIMARY KEY REFERENCES containers(id),
                private_data_readable boolean NOT NULL DEFAULT false
            )
            """,
        ])

    public func createOperator(name: String, passwordHash: String, now: Int64) async throws {
        try OperatorNames.check(name)
        let inserted = try await rows(
            """
            INSERT INTO operators (name, password_hash, created_at) VALUES (\(name), \(passwordHash), \(now))
            ON CONFLICT (name) DO NOTHING RETURNING name
            """)
        guard !inserted.isEmpty else {
            throw AccountError.operatorExists(name)
        }
    }

    public func setOperatorPassword(name: String, passwordHash: String) async throws -> Bool {
        try await transaction { transaction in
            let updated = try await transaction.rows(
                "UPDATE operators SET password_hash = \(passwordHash) WHERE name = \(name) RETURNING name")
            guard !updated.isEmpty else { return false }
            try await transaction.rows("DELETE FROM operator_sessions WHERE operator = \(name)")
            return true
        }
    }

    public func operatorAccount(named name: String) async throws -> OperatorAccount? {
        try await rows("SELECT name, password_hash, created_at FROM operators WHERE name = \(name)").first.map { row in
            let (name, hash, created) = try row.decode((String, String, Int64).self)
            return OperatorAccount(name: name, passwordHash: hash, createdAt: created)
        }
    }

    public func listOperators() async throws -> [OperatorAccount] {
        try await rows("SELECT name, password_hash, created_at FROM operators ORDER BY name").map { row in
            let (name, hash, created) = try row.decode((String, String, Int64).self)
            return OperatorAccount(name: name, passwordHash: hash, createdAt: created)
        }
    }

    public func openOperatorSession(_ session: OperatorSession) async throws {
        try await rows(
            """
            INSERT INTO operator_sessions (token_hash, operator, csrf_token, created_at, expires_at)
            VALUES (\(session.tokenHash), \(session.operatorName), \(session.csrfToken), \(session.createdAt),
                \(session.expiresAt))
            """)
    }

    public func operatorSession(tokenHash: String, now: Int64) async throws -> OperatorSession? {
        try await rows(
            """
            SELECT token_hash, operator, csrf_token, created_at, expires_at FROM operator_sessions
            WHERE token_hash = \(tokenHash) AND expires_at > \(now)
            """
        ).first.map { row in
            let (hash, name, csrf, created, expires) = try row.decode((String, String, String, Int64, Int64).self)
            return OperatorSession(tokenHash: hash, operatorName: name, csrfToken: csrf, createdAt: created, expiresAt: expires)
        }
    }

    public func closeOperatorSession(tokenHash: String, now: Int64) async throws {
        try await rows("DELETE FROM operator_sessions WHERE token_hash = \(tokenHash) OR expires_at <= \(now)")
    }

    public func appendAudit(_ entry: OperatorAuditEntry) async throws {
        try await rows(
            """
            INSERT INTO operator_audit (at, operator, action, container, detail)
            VALUES (\(entry.at), \(entry.operatorName), \(entry.action), \(entry.container), \(entry.detail))
            """)
    }

    public func auditLog(limit: Int) async throws -> [OperatorAuditEntry] {
        try await rows(
            "SELECT at, operator, action, container, detail FROM operator_audit ORDER BY id DESC LIMIT \(Int64(limit))"
        ).map { row in
            let (at, name, action, container, detail) = try row.decode((Int64, String, String, String, String).self)
            return OperatorAuditEntry(at: at, operatorName: name, action: action, container: container, detail: detail)
        }
    }

    public func operatorsMayReadPrivateData(container: String) async throws -> Bool {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            return try await transaction.rows(
                "SELECT private_data_readable FROM container_operator_settings WHERE container = \(container)"
            ).first.map { try $0.decode(Bool.self) } ?? false
        }
    }

    public func setOperatorsMayReadPrivateData(_ allowed: Bool, container: String) async throws {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            try await transaction.rows(
                """
                INSERT INTO container_operator_settings (container, private_data_readable) VALUES (\(container), \(allowed))
                ON CONFLICT (container) DO UPDATE SET private_data_readable = EXCLUDED.private_data_readable
                """)
        }
    }

    public func containerUsers(container: String) async throws -> [UserIdentity] {
        try await rows(
            """
            SELECT u.name, i.record_name, u.email, u.first_name, u.last_name
            FROM user_identities i JOIN users u ON u.name = i.user_name
            WHERE i.container = \(container) ORDER BY u.name
            """
        ).map { row in
            let (name, recordName, email, first, last) = try row.decode((String, String, String?, String?, String?).self)
            return UserIdentity(name: name, recordName: recordName, container: container, email: email, firstName: first, lastName: last)
        }
    }
}
