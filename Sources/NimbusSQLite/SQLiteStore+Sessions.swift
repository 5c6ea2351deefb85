import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: SessionStore {
    public func createSession(user userName: String, container: String, device: SessionDevice) async throws
        -> IssuedSession
    {
        try await pool.write { db in
            try Self.openSession(db, userName: userName, container: container, device: device, now: self.clock.nowMillis())
        }
    }

    public func session(forToken token: String) async throws -> Session? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.sessionColumns) FROM sessions WHERE token_hash = ? AND revoked_at IS NULL",
                arguments: [SessionToken.hash(token)]
            ).flatMap { try Self.session(db, $0) }
        }
    }

    public func touchSession(id: String, at millis: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE sessions SET last_seen_at = max(last_seen_at, ?) WHERE id = ?", arguments: [millis, id])
        }
    }

    public func refreshSession(id: String, at millis: Int64) async throws -> IssuedSession? {
        try await pool.write { db in
            let token = SessionToken.generate()
            try db.execute(
                sql: "UPDATE sessions SET token_hash = ?, last_seen_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [SessionToken.hash(token), millis, id])
            guard db.changesCount > 0,
                let row = try Row.fetchOne(
                    db, sql: "SELECT \(Self.sessionColumns) FROM sessions WHERE id = ?", arguments: [id]),
                let session = try Self.session(db, row)
            else { return nil }
            return IssuedSession(session: session, token: token)
        }
    }

    public func listSessions(container: String?, userName: String?) async throws -> [Session] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.sessionColumns) FROM sessions
                    WHERE (? IS NULL OR container = ?) AND (? IS NULL OR user_name = ?)
                    ORDER BY created_at, id
                    """,
                arguments: [container, container, userName, userName]
            ).compactMap { try Self.session(db, $0) }
        }
    }

    public func revokeSession(id: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [self.clock.nowMillis(), id])
            return db.changesCount > 0
        }
    }

    public func liveSessionIDs(_ ids: [String], seenSince: Int64) async throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return try await pool.read { db in
            Set(
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT id FROM sessions
                        WHERE id IN (SELECT value FROM json_each(?)) AND revoked_at IS NULL AND last_seen_at >= ?
                        """,
                    arguments: [JSON.array(ids.map(JSON.string)).serialized(), seenSince]))
        }
    }

    // MARK: - Helpers

    static let sessionColumns =
        "id, user_name, container, device_name, platform, created_at, last_seen_at, revoked_at IS NOT NULL"

    /// Opens a session for a user signed into the container, at `now`.
    static func openSession(_ db: Database, userName: String, container: String, device: SessionDevice, now: Int64)
        throws -> IssuedSession
    {
        guard let user = try identity(db, userName: userName, container: container) else {
            throw AccountError.notSignedIn(userName, container: container)
        }
        let token = SessionToken.generate()
        let id = SessionToken.newID()
        try db.execute(
            sql: """
                INSERT INTO sessions (id, token_hash, user_name, container, device_name, platform, created_at, last_seen_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [id, SessionToken.hash(token), userName, container, device.name, device.platform, now, now])
        let session = Session(
            id: id, userName: userName, container: container, user: user, device: device, createdAt: now,
            lastSeenAt: now, revoked: false)
        return IssuedSession(session: session, token: token)
    }

    /// A session from a row of ``sessionColumns``; `nil` if its user left the container.
    static func session(_ db: Database, _ row: Row) throws -> Session? {
        let userName: String = row[1]
        let container: String = row[2]
        guard let user = try identity(db, userName: userName, container: container) else { return nil }
        return Session(
            id: row[0], userName: userName, container: container, user: user,
            device: SessionDevice(name: row[3], platform: row[4]), createdAt: row[5], lastSeenAt: row[6],
            revoked: row[7])
    }
}
