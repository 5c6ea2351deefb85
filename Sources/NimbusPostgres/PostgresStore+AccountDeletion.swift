import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: AccountDeletionStore {
    public func recordsCreated(by creator: String, in database: DatabaseKey, limit: Int) async throws -> [CreatedRecord] {
        try await rows(
            """
            SELECT r.zone, r.name, r.type FROM records r JOIN databases d ON d.id = r.db
            WHERE d.container = \(database.container) AND d.environment = \(database.environment.rawValue)
              AND d.scope = \(database.scope.rawValue) AND d.owner = \(database.owner)
              AND r.created_by = \(creator) AND NOT r.deleted
            LIMIT \(limit)
            """
        ).map { row in
            let (zone, name, type) = try row.decode((String, String, String).self)
            return CreatedRecord(zone: zone, recordName: name, recordType: type)
        }
    }

    public func deleteAccount(userName: String, container: String) async throws -> [String] {
        defer { accountsChanged() }
        return try await transaction { transaction in
            guard let user = try await identity(transaction, userName: userName, container: container) else {
                throw AccountError.notSignedIn(userName, container: container)
            }
            let owner = user.recordName
            let privateDatabases = try await transaction.rows(
                """
                SELECT id FROM databases WHERE container = \(container) AND scope = 'private' AND owner = \(owner)
                FOR UPDATE
                """
            ).map { try $0.decode(Int64.self) }
            for id in privateDatabases {
                for table in Self.perDatabaseTables {
                    try await transaction.rows("DELETE FROM \(unescaped: table) WHERE db = \(id)")
                }
                try await transaction.rows("DELETE FROM databases WHERE id = \(id)")
            }
            try await transaction.rows(
                """
                DELETE FROM subscriptions WHERE owner = \(owner)
                  AND db IN (SELECT id FROM databases WHERE container = \(container) AND scope = 'public')
                """)
            for table in ["notifications", "notification_users", "push_devices", "push_tokens"] {
                try await transaction.rows(
                    "DELETE FROM \(unescaped: table) WHERE container = \(container) AND recipient = \(owner)")
            }
            let sessions = try await transaction.rows(
                """
                SELECT id FROM sessions WHERE user_name = \(userName) AND container = \(container) AND revoked_at IS NULL
                """
            ).map { try $0.decode(String.self) }
            try await transaction.rows("DELETE FROM sessions WHERE user_name = \(userName) AND container = \(container)")
            try await transaction.rows(
                "DELETE FROM user_identities WHERE user_name = \(userName) AND container = \(container)")
            let elsewhere = try await !transaction.rows(
                "SELECT 1 FROM user_identities WHERE user_name = \(userName)").isEmpty
            if !elsewhere {
                for table in ["user_logins", "one_time_codes", "sessions"] {
                    try await transaction.rows("DELETE FROM \(unescaped: table) WHERE user_name = \(userName)")
                }
                try await transaction.rows("DELETE FROM users WHERE name = \(userName)")
            }
            return sessions
        }
    }

    /// The tables whose rows belong to one database (`db` column).
    static let perDatabaseTables = [
        "records", "record_refs", "record_values", "record_tokens", "asset_refs", "asset_uploads", "assets",
        "subscriptions", "zones",
    ]
}
