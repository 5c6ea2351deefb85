import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: AccountStore {
    public func createContainer(_ identifier: String) async throws -> IssuedToken {
        try AccountRules.checkContainerIdentifier(identifier)
        return try await transaction { transaction in
            let now = self.clock.nowMillis()
            let created = try await transaction.rows(
                """
                INSERT INTO containers (id, created_at) VALUES (\(identifier), \(now))
                ON CONFLICT DO NOTHING RETURNING id
                """)
            guard !created.isEmpty else {
                throw AccountError.containerExists(identifier)
            }
            return try await issue(transaction, kind: .api, container: identifier, user: nil, now: now)
        }
    }

    public func listContainers() async throws -> [String] {
        try await rows("SELECT id FROM containers ORDER BY id").map { try $0.decode(String.self) }
    }

    public func createAPIToken(container: String) async throws -> IssuedToken {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            return try await issue(transaction, kind: .api, container: container, user: nil, now: self.clock.nowMillis())
        }
    }

    public func createUser(
        name: String, email: String?, firstName: String?, lastName: String?, container: String
    ) async throws -> IssuedToken {
        try AccountRules.checkUserName(name)
        return try await transaction { transaction in
            let now = self.clock.nowMillis()
            try await requireContainer(transaction, container)
            // CloudKit user record names start with '_' and differ per container.
            try await transaction.rows(
                """
                WITH upserted AS (
                    INSERT INTO users (name, email, first_name, last_name, created_at)
                    VALUES (\(name), \(email), \(firstName), \(lastName), \(now))
                    ON CONFLICT (name) DO UPDATE SET
                        email = COALESCE(EXCLUDED.email, users.email),
                        first_name = COALESCE(EXCLUDED.first_name, users.first_name),
                        last_name = COALESCE(EXCLUDED.last_name, users.last_name)
                    RETURNING name)
                INSERT INTO user_identities (user_name, container, record_name)
                SELECT name, \(container), \("_" + RandomToken.hex(bytes: 16)) FROM upserted
                ON CONFLICT (user_name, container) DO NOTHING
                """)
            let issued = try await openSession(
                transaction, userName: name, container: container, device: .operatorIssued, now: now)
            return IssuedToken(
                token: issued.token, kind: .webAuth, container: container, user: issued.session.user, createdAt: now,
                revoked: false, sessionID: issued.session.id)
        }
    }

    public func listTokens(container: String?) async throws -> [IssuedToken] {
        try await rows(
            """
            SELECT t.token, t.kind, t.container, t.created_at, t.revoked, \(unescaped: Self.identityColumns)
            FROM (
                SELECT token, 'api' AS kind, container, created_at, revoked_at IS NOT NULL AS revoked,
                    NULL::text AS user_name
                FROM tokens WHERE kind = 'api'
                UNION ALL
                SELECT id, 'web', container, created_at, revoked_at IS NOT NULL, user_name FROM sessions
            ) t
            LEFT JOIN users u ON u.name = t.user_name
            LEFT JOIN user_identities i ON i.user_name = t.user_name AND i.container = t.container
            WHERE \(container)::text IS NULL OR t.container = \(container)
            ORDER BY t.created_at, t.token
            """
        ).map { row in
            var columns = ColumnReader(row)
            let (token, kind, container, createdAt, revoked) = (
                try columns.next(String.self), try columns.next(String.self), try columns.next(String.self),
                try columns.next(Int64.self), try columns.next(Bool.self)
            )
            let tokenKind = IssuedToken.Kind(rawValue: kind) ?? .api
            return IssuedToken(
                token: token, kind: tokenKind, container: container,
                user: try columns.optionalIdentity(container: container), createdAt: createdAt, revoked: revoked,
                sessionID: tokenKind == .webAuth ? token : nil)
        }
    }

    public func revokeToken(_ token: String) async throws -> Bool {
        let now = clock.nowMillis()
        defer { accountsChanged() }
        return try await transaction { transaction in
            let api = try await transaction.rows(
                """
                UPDATE tokens SET revoked_at = \(now) WHERE token = \(token) AND revoked_at IS NULL RETURNING token
                """)
            if !api.isEmpty { return true }
            return try await !transaction.rows(
                """
                UPDATE sessions SET revoked_at = \(now)
                WHERE (token_hash = \(SessionToken.hash(token)) OR id = \(token)) AND revoked_at IS NULL
                RETURNING id
                """
            ).isEmpty
        }
    }

    public func addServerKey(keyID: String, container: String, publicKeyPEM: String) async throws {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            do {
                try await transaction.rows(
                    """
                    INSERT INTO server_keys (key_id, container, public_key_pem, created_at)
                    VALUES (\(keyID), \(container), \(publicKeyPEM), \(clock.nowMillis()))
                    """)
            } catch where Self.isUniqueViolation(error) {
                throw AccountError.serverKeyExists(keyID)
            }
        }
    }

    public func listServerKeys(container: String?) async throws -> [ServerKey] {
        try await rows(
            """
            SELECT \(unescaped: Self.serverKeyColumns) FROM server_keys
            WHERE \(container)::text IS NULL OR container = \(container)
            ORDER BY created_at, key_id
            """
        ).map(Self.serverKey)
    }

    public func revokeServerKey(keyID: String) async throws -> Bool {
        try await !rows(
            """
            UPDATE server_keys SET revoked_at = \(clock.nowMillis()) WHERE key_id = \(keyID) AND revoked_at IS NULL
            RETURNING key_id
            """
        ).isEmpty
    }

    public func container(forAPIToken token: String) async throws -> String? {
        try await lookUpTokens(apiToken: token, webAuthToken: nil).container
    }

    public func user(forWebAuthToken token: String) async throws -> UserIdentity? {
        try await lookUpTokens(apiToken: "", webAuthToken: token).user
    }

    public func serverKey(id: String) async throws -> ServerKey? {
        try await rows(
            """
            SELECT \(unescaped: Self.serverKeyColumns) FROM server_keys WHERE key_id = \(id) AND revoked_at IS NULL
            """
        ).first.map(Self.serverKey)
    }

    public func user(recordName: String, container: String) async throws -> UserIdentity? {
        try await rows(
            """
            SELECT \(unescaped: Self.identityColumns)
            FROM user_identities i JOIN users u ON u.name = i.user_name
            WHERE i.record_name = \(recordName) AND i.container = \(container)
            """
        ).first.flatMap { try ColumnReader.identity(in: $0, container: container) }
    }

    public func user(named name: String, container: String) async throws -> UserIdentity? {
        try await rows(
            """
            SELECT \(unescaped: Self.identityColumns)
            FROM user_identities i JOIN users u ON u.name = i.user_name
            WHERE i.user_name = \(name) AND i.container = \(container)
            """
        ).first.flatMap { try ColumnReader.identity(in: $0, container: container) }
    }

    public func updateDiscoverable(_ discoverable: Bool, userName: String, container: String) async throws -> UserIdentity? {
        defer { accountsChanged() }
        return try await transaction { transaction in
            let updated = try await transaction.rows(
                """
                UPDATE user_identities SET discoverable = \(discoverable)
                WHERE user_name = \(userName) AND container = \(container)
                RETURNING record_name
                """)
            return updated.isEmpty ? nil : try await identity(transaction, userName: userName, container: container)
        }
    }

    public func discoverableUsers(
        emailAddresses: [String], recordNames: [String], container: String
    ) async throws -> [UserIdentity] {
        guard let (emails, recordNames) = UserIdentity.discoveryKeys(emailAddresses: emailAddresses, recordNames: recordNames)
        else { return [] }
        return try await rows(
            """
            SELECT \(unescaped: Self.identityColumns)
            FROM user_identities i JOIN users u ON u.name = i.user_name
            WHERE i.container = \(container) AND i.discoverable
              AND (lower(u.email COLLATE "C") = ANY(\(emails)) OR i.record_name = ANY(\(recordNames)))
            """
        ).compactMap { try ColumnReader.identity(in: $0, container: container) }
    }
}

extension PostgresStore {
    /// The columns of a user as seen from a container (tables `u`, users, and `i`, identities).
    static let identityColumns = "u.name, i.record_name, u.email, u.first_name, u.last_name"
    static let serverKeyColumns = "key_id, container, public_key_pem, created_at, revoked_at IS NOT NULL"

    func requireContainer(_ transaction: Transaction, _ container: String) async throws {
        guard try await !transaction.rows("SELECT 1 FROM containers WHERE id = \(container)").isEmpty else {
            throw AccountError.noContainer(container)
        }
    }

    /// Issues a token created at `now`.
    func issue(_ transaction: Transaction, kind: IssuedToken.Kind, container: String, user: UserIdentity?, now: Int64)
        async throws -> IssuedToken
    {
        let token = RandomToken.hex()
        try await transaction.rows(
            """
            INSERT INTO tokens (token, kind, container, user_name, created_at)
            VALUES (\(token), \(kind.rawValue), \(container), \(user?.name), \(now))
            """)
        return IssuedToken(token: token, kind: kind, container: container, user: user, createdAt: now, revoked: false)
    }

    func identity(_ transaction: Transaction, userName: String, container: String) async throws -> UserIdentity? {
        try await transaction.rows(
            """
            SELECT \(unescaped: Self.identityColumns)
            FROM users u JOIN user_identities i ON i.user_name = u.name
            WHERE u.name = \(userName) AND i.container = \(container)
            """
        ).first.flatMap { try ColumnReader.identity(in: $0, container: container) }
    }

    static func serverKey(_ row: PostgresRow) throws -> ServerKey {
        let (keyID, container, pem, createdAt, revoked) = try row.decode((String, String, String, Int64, Bool).self)
        return ServerKey(keyID: keyID, container: container, publicKeyPEM: pem, createdAt: createdAt, revoked: revoked)
    }
}

extension ColumnReader {
    /// The user a row starting with ``PostgresStore/identityColumns`` names, if any.
    static func identity(in row: PostgresRow, container: String) throws -> UserIdentity? {
        var columns = ColumnReader(row)
        return try columns.optionalIdentity(container: container)
    }

    /// A user from ``PostgresStore/identityColumns``; `nil` when the outer join found none.
    mutating func optionalIdentity(container: String) throws -> UserIdentity? {
        guard let name = try next(String?.self), let recordName = try next(String?.self) else { return nil }
        return UserIdentity(
            name: name, recordName: recordName, container: container, email: try next(), firstName: try next(),
            lastName: try next())
    }
}
