import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: SessionStore {
    public func createSession(user userName: String, container: String, device: SessionDevice) async throws
        -> IssuedSession
    {
        try await transaction { transaction in
            try await openSession(
                transaction, userName: userName, container: container, device: device, now: clock.nowMillis())
        }
    }

    public func session(forToken token: String) async throws -> Session? {
        try await rows(
            """
            SELECT \(unescaped: Self.sessionColumns) \(unescaped: Self.sessionJoins)
            WHERE s.token_hash = \(SessionToken.hash(token)) AND s.revoked_at IS NULL
            """
        ).first.map(Self.session)
    }

    public func touchSession(id: String, at millis: Int64) async throws {
        defer { accountsChanged(session: id) }
        try await rows("UPDATE sessions SET last_seen_at = GREATEST(last_seen_at, \(millis)) WHERE id = \(id)")
    }

    public func refreshSession(id: String, at millis: Int64) async throws -> IssuedSession? {
        let token = SessionToken.generate()
        defer { accountsChanged(session: id) }
        let updated = try await rows(
            """
            UPDATE sessions SET token_hash = \(SessionToken.hash(token)), last_seen_at = \(millis)
            WHERE id = \(id) AND revoked_at IS NULL RETURNING id
            """)
        guard !updated.isEmpty else { return nil }
        guard
            let session = try await rows(
                "SELECT \(unescaped: Self.sessionColumns) \(unescaped: Self.sessionJoins) WHERE s.id = \(id)"
            ).first.map(Self.session)
        else { return nil }
        return IssuedSession(session: session, token: token)
    }

    public func listSessions(container: String?, userName: String?) async throws -> [Session] {
        try await rows(
            """
            SELECT \(unescaped: Self.sessionColumns) \(unescaped: Self.sessionJoins)
            WHERE (\(container)::text IS NULL OR s.container = \(container))
              AND (\(userName)::text IS NULL OR s.user_name = \(userName))
            ORDER BY s.created_at, s.id
            """
        ).map(Self.session)
    }

    public func revokeSession(id: String) async throws -> Bool {
        defer { accountsChanged(session: id) }
        return try await !rows(
            """
            UPDATE sessions SET revoked_at = \(clock.nowMillis()) WHERE id = \(id) AND revoked_at IS NULL RETURNING id
            """
        ).isEmpty
    }

    public func liveSessionIDs(_ ids: [String], seenSince: Int64) async throws -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return Set(
            try await rows(
                """
                SELECT id FROM sessions WHERE id = ANY(\(ids)) AND revoked_at IS NULL AND last_seen_at >= \(seenSince)
                """
            ).map { try $0.decode(String.self) })
    }
}

extension PostgresStore {
    /// A session's columns, then its user's (``identityColumns``), from ``sessionJoins``.
    static let sessionColumns =
        "s.id, s.container, s.device_name, s.platform, s.created_at, s.last_seen_at, s.revoked_at IS NOT NULL, "
        + identityColumns
    static let sessionJoins = """
        FROM sessions s JOIN users u ON u.name = s.user_name
        JOIN user_identities i ON i.user_name = s.user_name AND i.container = s.container
        """

    static func session(_ row: PostgresRow) throws -> Session {
        var columns = ColumnReader(row)
        let (id, container, deviceName, platform, createdAt, lastSeenAt, revoked) = (
            try columns.next(String.self), try columns.next(String.self), try columns.next(String.self),
            try columns.next(String.self), try columns.next(Int64.self), try columns.next(Int64.self),
            try columns.next(Bool.self)
        )
        guard let user = try columns.optionalIdentity(container: container) else {
            throw PostgresStoreError(.corruptRow, "session \(id) has no user")
        }
        return Session(
            id: id, userName: user.name, container: container, user: user,
            device: SessionDevice(name: deviceName, platform: platform), createdAt: createdAt, lastSeenAt: lastSeenAt,
            revoked: revoked)
    }

    /// Opens a session for a user signed into the container, at `now`.
    func openSession(
        _ transaction: Transaction, userName: String, container: String, device: SessionDevice, now: Int64
    ) async throws -> IssuedSession {
        guard let user = try await identity(transaction, userName: userName, container: container) else {
            throw AccountError.notSignedIn(userName, container: container)
        }
        let token = SessionToken.generate()
        let id = SessionToken.newID()
        try await transaction.rows(
            """
            INSERT INTO sessions (id, token_hash, user_name, container, device_name, platform, created_at, last_seen_at)
            VALUES (\(id), \(SessionToken.hash(token)), \(userName), \(container), \(device.name), \(device.platform),
                \(now), \(now))
            """)
        let session = Session(
            id: id, userName: userName, container: container, user: user, device: device, createdAt: now,
            lastSeenAt: now, revoked: false)
        return IssuedSession(session: session, token: token)
    }
}
