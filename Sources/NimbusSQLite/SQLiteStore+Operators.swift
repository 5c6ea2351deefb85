import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: OperatorStore {
    /// Schema v11 ("v11-operators"): the dashboard's operators, their sessions (token hashes),
    /// the audit log, and each container's operator settings.
    static func migrateV11Operators(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE operators (
                    name TEXT PRIMARY KEY,
                    password_hash TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE operator_sessions (
                    token_hash TEXT PRIMARY KEY,
                    operator TEXT NOT NULL REFERENCES operators(name) ON DELETE CASCADE,
                    csrf_token TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL
                );
                CREATE INDEX operator_sessions_by_expiry ON operator_sessions(expires_at);
                CREATE TABLE operator_audit (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    at INTEGER NOT NULL,
                    operator TEXT NOT NULL,
                    action TEXT NOT NULL,
                    container TEXT NOT NULL,
                    detail TEXT NOT NULL
                );
                CREATE TABLE container_operator_settings (
                    container TEXT PRIMARY KEY REFERENCES containers(id),
                    private_data_readable INTEGER NOT NULL DEFAULT 0
                );
                """)
    }

    public func createOperator(name: String, passwordHash: String, now: Int64) async throws {
        try OperatorNames.check(name)
        try await pool.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM operators WHERE name = ?", arguments: [name]) == true {
                throw AccountError.operatorExists(name)
            }
            try db.execute(
                sql: "INSERT INTO operators (name, password_hash, created_at) VALUES (?, ?, ?)",
                arguments: [name, passwordHash, now])
        }
    }

    public func setOperatorPassword(name: String, passwordHash: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE operators SET password_hash = ? WHERE name = ?", arguments: [passwordHash, name])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "DELETE FROM operator_sessions WHERE operator = ?", arguments: [name])
            return true
        }
    }

    public func operatorAccount(named name: String) async throws -> OperatorAccount? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT name, password_hash, created_at FROM operators WHERE name = ?", arguments: [name]
            ).map { OperatorAccount(name: $0[0], passwordHash: $0[1], createdAt: $0[2]) }
        }
    }

    public func listOperators() async throws -> [OperatorAccount] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT name, password_hash, created_at FROM operators ORDER BY name")
                .map { OperatorAccount(name: $0[0], passwordHash: $0[1], createdAt: $0[2]) }
        }
    }

    public func openOperatorSession(_ session: OperatorSession) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO operator_sessions (token_hash, operator, csrf_token, created_at, expires_at)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    session.tokenHash, session.operatorName, session.csrfToken, session.createdAt, session.expiresAt,
                ])
        }
    }

    public func operatorSession(tokenHash: String, now: Int64) async throws -> OperatorSession? {
        try await pool.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT token_hash, operator, csrf_token, created_at, expires_at FROM operator_sessions
                    WHERE token_hash = ? AND expires_at > ?
                    """,
                arguments: [tokenHash, now]
            ).map {
                OperatorSession(
                    tokenHash: $0[0], operatorName: $0[1], csrfToken: $0[2], createdAt: $0[3], expiresAt: $0[4])
            }
        }
    }

    public func closeOperatorSession(tokenHash: String, now: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM operator_sessions WHERE token_hash = ? OR expires_at <= ?", arguments: [tokenHash, now])
        }
    }

    public func appendAudit(_ entry: OperatorAuditEntry) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO operator_audit (at, operator, action, container, detail) VALUES (?, ?, ?, ?, ?)",
                arguments: [entry.at, entry.operatorName, entry.action, entry.container, entry.detail])
        }
    }

    public func auditLog(limit: Int) async throws -> [OperatorAuditEntry] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT at, operator, action, container, detail FROM operator_audit ORDER BY id DESC LIMIT ?",
                arguments: [limit]
            ).map { OperatorAuditEntry(at: $0[0], operatorName: $0[1], action: $0[2], container: $0[3], detail: $0[4]) }
        }
    }

    public func operatorsMayReadPrivateData(container: String) async throws -> Bool {
        try await pool.read { db in
            try Self.requireContainer(db, container)
            return try Bool.fetchOne(
                db, sql: "SELECT private_data_readable FROM container_operator_settings WHERE container = ?",
                arguments: [container]) ?? false
        }
    }

    public func setOperatorsMayReadPrivateData(_ allowed: Bool, container: String) async throws {
        try await pool.write { db in
            try Self.requireContainer(db, container)
            try db.execute(
                sql: """
                    INSERT INTO container_operator_settings (container, private_data_readable) VALUES (?, ?)
                    ON CONFLICT(container) DO UPDATE SET private_data_readable = excluded.private_data_readable
                    """,
                arguments: [container, allowed])
        }
    }

    public func containerUsers(container: String) async throws -> [UserIdentity] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT u.name, i.record_name, u.email, u.first_name, u.last_name
                    FROM user_identities i JOIN users u ON u.name = i.user_name
                    WHERE i.container = ? ORDER BY u.name
                    """,
                arguments: [container]
            ).map {
                UserIdentity(name: $0[0], recordName: $0[1], container: container, email: $0[2], firstName: $0[3], lastName: $0[4])
            }
        }
    }
}
