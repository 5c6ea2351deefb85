import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: AccountStore {
    public func createContainer(_ identifier: String) async throws -> IssuedToken {
        try AccountRules.checkContainerIdentifier(identifier)
        return try await pool.write { db in
            let now = self.clock.nowMillis()
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM containers WHERE id = ?", arguments: [identifier]) == true {
                throw AccountError.containerExists(identifier)
            }
            try db.execute(
                sql: "INSERT INTO containers (id, created_at) VALUES (?, ?)", arguments: [identifier, now])
            return try Self.issue(db, kind: .api, container: identifier, user: nil, now: now)
        }
    }

    public func listContainers() async throws -> [String] {
        try await pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM containers ORDER BY id") }
    }

    public func createAPIToken(container: String) async throws -> IssuedToken {
        try await pool.write { db in
            try Self.requireContainer(db, container)
            return try Self.issue(db, kind: .api, container: container, user: nil, now: self.clock.nowMillis())
        }
    }

    public func createUser(
        name: String, email: String?, firstName: String?, lastName: String?, container: String
    ) async throws -> IssuedToken {
        try AccountRules.checkUserName(name)
        return try await pool.write { db in
            let now = self.clock.nowMillis()
            try Self.requireContainer(db, container)
            try db.execute(
                sql: """
                    INSERT INTO users (name, email, first_name, last_name, created_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(name) DO UPDATE SET
                        email = COALESCE(excluded.email, email),
                        first_name = COALESCE(excluded.first_name, first_name),
                        last_name = COALESCE(excluded.last_name, last_name)
                    """,
                arguments: [name, email, firstName, lastName, now])
            let existing = try String.fetchOne(
                db, sql: "SELECT record_name FROM user_identities WHERE user_name = ? AND container = ?",
                arguments: [name, container])
            if existing == nil {
                // CloudKit user record names start with '_' and differ per container.
                try db.execute(
                    sql: "INSERT INTO user_identities (user_name, container, record_name) VALUES (?, ?, ?)",
                    arguments: [name, container, "_" + RandomToken.hex(bytes: 16)])
            }
            let issued = try Self.openSession(
                db, userName: name, container: container, device: .operatorIssued, now: now)
            return IssuedToken(
                token: issued.token, kind: .webAuth, container: container, user: issued.session.user, createdAt: now,
                revoked: false, sessionID: issued.session.id)
        }
    }

    public func listTokens(container: String?) async throws -> [IssuedToken] {
        try await pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT token, container, created_at, revoked_at IS NOT NULL, NULL AS user_name, 0 AS is_session
                    FROM tokens WHERE kind = 'api' AND (? IS NULL OR container = ?)
                    UNION ALL
                    SELECT id, container, created_at, revoked_at IS NOT NULL, user_name, 1
                    FROM sessions WHERE (? IS NULL OR container = ?)
                    ORDER BY created_at, 1
                    """,
                arguments: [container, container, container, container])
            return try rows.map { row in
                let userName: String? = row[4]
                let containerID: String = row[1]
                let isSession: Bool = row[5]
                return IssuedToken(
                    token: row[0], kind: isSession ? .webAuth : .api, container: containerID,
                    user: try userName.flatMap { try Self.identity(db, userName: $0, container: containerID) },
                    createdAt: row[2], revoked: row[3], sessionID: isSession ? row[0] : nil)
            }
        }
    }

    public func revokeToken(_ token: String) async throws -> Bool {
        try await pool.write { db in
            let now = self.clock.nowMillis()
            try db.execute(
                sql: "UPDATE tokens SET revoked_at = ? WHERE token = ? AND revoked_at IS NULL", arguments: [now, token])
            if db.changesCount > 0 { return true }
            try db.execute(
                sql: "UPDATE sessions SET revoked_at = ? WHERE (token_hash = ? OR id = ?) AND revoked_at IS NULL",
                arguments: [now, SessionToken.hash(token), token])
            return db.changesCount > 0
        }
    }

    public func addServerKey(keyID: String, container: String, publicKeyPEM: String) async throws {
        try await pool.write { db in
            try Self.requireContainer(db, container)
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM server_keys WHERE key_id = ?", arguments: [keyID]) == true {
                throw AccountError.serverKeyExists(keyID)
            }
            try db.execute(
                sql: "INSERT INTO server_keys (key_id, container, public_key_pem, created_at) VALUES (?, ?, ?, ?)",
                arguments: [keyID, container, publicKeyPEM, self.clock.nowMillis()])
        }
    }

    public func listServerKeys(container: String?) async throws -> [ServerKey] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM server_keys WHERE (? IS NULL OR container = ?) ORDER BY created_at, key_id",
                arguments: [container, container]
            ).map(Self.serverKey)
        }
    }

    public func revokeServerKey(keyID: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE server_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                arguments: [self.clock.nowMillis(), keyID])
            return db.changesCount > 0
        }
    }

    public func container(forAPIToken token: String) async throws -> String? {
        try await pool.read { db in
            try String.fetchOne(
                db.cachedStatement(
                    sql: "SELECT container FROM tokens WHERE token = ? AND kind = 'api' AND revoked_at IS NULL"),
                arguments: [token])
        }
    }

    public func user(forWebAuthToken token: String) async throws -> UserIdentity? {
        try await pool.read { db in try Self.user(db, webAuthToken: token)?.user }
    }

    /// One read for both lookups of a request (every API request makes them), and none while
    /// the answer is fresh in ``tokenLookups`` (a change through this store ends it at once,
    /// one by another process within ``TokenLookupCache/lifetimeMillis``).
    public func lookUpTokens(apiToken: String, webAuthToken: String?) async throws -> TokenLookup {
        if let cached = tokenLookups.lookup(apiToken: apiToken, webAuthToken: webAuthToken, now: clock.nowMillis()) {
            return cached
        }
        let generation = tokenLookups.generation
        let (found, rows) = try await readTokens(apiToken: apiToken, webAuthToken: webAuthToken)
        tokenLookups.store(
            found, rows: rows, apiToken: apiToken, webAuthToken: webAuthToken, generation: generation,
            now: clock.nowMillis())
        return found
    }

    /// The lookup, and the rows it was read from.
    private func readTokens(apiToken: String, webAuthToken: String?) async throws -> (TokenLookup, [TokenLookupCache.Row]) {
        try await pool.read { db in
            var rows: [TokenLookupCache.Row] = []
            let api = try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT container, rowid FROM tokens WHERE token = ? AND kind = 'api' AND revoked_at IS NULL"),
                arguments: [apiToken])
            let container: String? = api?[0]
            if let api { rows.append(TokenLookupCache.Row(table: "tokens", rowID: api[1])) }
            guard let webAuthToken, let found = try Self.user(db, webAuthToken: webAuthToken) else {
                return (TokenLookup(container: container, user: nil), rows)
            }
            return (TokenLookup(container: container, user: found.user, session: found.session), rows + found.rows)
        }
    }

    /// The user and session of an unrevoked session's token, and the rows they were read from.
    static func user(
        _ db: Database, webAuthToken token: String
    ) throws -> (user: UserIdentity, session: SessionStamp, rows: [TokenLookupCache.Row])? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT s.id, s.last_seen_at, u.name, i.record_name, u.email, u.first_name, u.last_name, s.container,
                            s.rowid, u.rowid, i.rowid
                        FROM sessions s JOIN users u ON u.name = s.user_name
                        JOIN user_identities i ON i.user_name = s.user_name AND i.container = s.container
                        WHERE s.token_hash = ? AND s.revoked_at IS NULL
                        """),
                arguments: [SessionToken.hash(token)])
        else { return nil }
        let user = UserIdentity(
            name: row[2], recordName: row[3], container: row[7], email: row[4], firstName: row[5], lastName: row[6])
        let rows = [
            TokenLookupCache.Row(table: "sessions", rowID: row[8]), TokenLookupCache.Row(table: "users", rowID: row[9]),
            TokenLookupCache.Row(table: "user_identities", rowID: row[10]),
        ]
        return (user, SessionStamp(id: row[0], lastSeenAt: row[1]), rows)
    }

    public func serverKey(id: String) async throws -> ServerKey? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM server_keys WHERE key_id = ? AND revoked_at IS NULL", arguments: [id]
            ).map(Self.serverKey)
        }
    }

    public func user(recordName: String, container: String) async throws -> UserIdentity? {
        try await pool.read { db in
            guard
                let userName = try String.fetchOne(
                    db, sql: "SELECT user_name FROM user_identities WHERE record_name = ? AND container = ?",
                    arguments: [recordName, container])
            else { return nil }
            return try Self.identity(db, userName: userName, container: container)
        }
    }

    public func user(named name: String, container: String) async throws -> UserIdentity? {
        try await pool.read { db in
            guard
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM user_identities WHERE user_name = ? AND container = ?", arguments: [name, container])
                    ?? false
            else { return nil }
            return try Self.identity(db, userName: name, container: container)
        }
    }

    public func updateDiscoverable(_ discoverable: Bool, userName: String, container: String) async throws -> UserIdentity? {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE user_identities SET discoverable = ? WHERE user_name = ? AND container = ?",
                arguments: [discoverable, userName, container])
            return db.changesCount > 0 ? try Self.identity(db, userName: userName, container: container) : nil
        }
    }

    public func discoverableUsers(
        emailAddresses: [String], recordNames: [String], container: String
    ) async throws -> [UserIdentity] {
        guard let (emails, recordNames) = UserIdentity.discoveryKeys(emailAddresses: emailAddresses, recordNames: recordNames)
        else { return [] }
        return try await pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT u.name, i.record_name, u.email, u.first_name, u.last_name
                    FROM user_identities i JOIN users u ON u.name = i.user_name
                    WHERE i.container = ? AND i.discoverable = 1
                      AND (lower(u.email) IN (SELECT value FROM json_each(?))
                           OR i.record_name IN (SELECT value FROM json_each(?)))
                    """,
                arguments: [
                    container, JSON.array(emails.map(JSON.string)).serialized(),
                    JSON.array(recordNames.map(JSON.string)).serialized(),
                ])
            return rows.map { row in
                UserIdentity(
                    name: row[0], recordName: row[1], container: container, email: row[2], firstName: row[3],
                    lastName: row[4])
            }
        }
    }

    // MARK: - Helpers

    static func requireContainer(_ db: Database, _ container: String) throws {
        guard try Bool.fetchOne(db, sql: "SELECT 1 FROM containers WHERE id = ?", arguments: [container]) == true else {
            throw AccountError.noContainer(container)
        }
    }

    /// Issues a token created at `now`.
    static func issue(_ db: Database, kind: IssuedToken.Kind, container: String, user: UserIdentity?, now: Int64) throws
        -> IssuedToken
    {
        let token = RandomToken.hex()
        try db.execute(
            sql: "INSERT INTO tokens (token, kind, container, user_name, created_at) VALUES (?, ?, ?, ?, ?)",
            arguments: [token, kind.rawValue, container, user?.name, now])
        return IssuedToken(token: token, kind: kind, container: container, user: user, createdAt: now, revoked: false)
    }

    static func identity(_ db: Database, userName: String, container: String) throws -> UserIdentity? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT u.name, i.record_name, u.email, u.first_name, u.last_name
                        FROM users u JOIN user_identities i ON i.user_name = u.name
                        WHERE u.name = ? AND i.container = ?
                        """),
                arguments: [userName, container])
        else { return nil }
        return UserIdentity(
            name: row[0], recordName: row[1], container: container, email: row[2], firstName: row[3], lastName: row[4])
    }

    static func serverKey(_ row: Row) -> ServerKey {
        ServerKey(
            keyID: row["key_id"], container: row["container"], publicKeyPEM: row["public_key_pem"],
            createdAt: row["created_at"], revoked: (row["revoked_at"] as Int64?) != nil)
    }
}
