import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: AccountDeletionStore {
    public func recordsCreated(by creator: String, in database: DatabaseKey, limit: Int) async throws -> [CreatedRecord] {
        try await pool.read { db in
            guard let id = try Self.databaseRow(db, database)?.id else { return [] }
            return try Row.fetchAll(
                db,
                sql: "SELECT zone, name, type FROM records WHERE db = ? AND created_by = ? AND deleted = 0 LIMIT ?",
                arguments: [id, creator, limit]
            ).map { CreatedRecord(zone: $0[0], recordName: $0[1], recordType: $0[2]) }
        }
    }

    public func deleteAccount(userName: String, container: String) async throws -> [String] {
        try await pool.write { db in
            guard let user = try Self.identity(db, userName: userName, container: container) else {
                throw AccountError.notSignedIn(userName, container: container)
            }
            let owner = user.recordName
            let privateDatabases = try Int64.fetchAll(
                db, sql: "SELECT id FROM databases WHERE container = ? AND scope = 'private' AND owner = ?",
                arguments: [container, owner])
            for id in privateDatabases {
                for table in Self.perDatabaseTables {
                    try db.execute(sql: "DELETE FROM \(table) WHERE db = ?", arguments: [id])
                }
                try db.execute(sql: "DELETE FROM databases WHERE id = ?", arguments: [id])
            }
            try db.execute(
                sql: """
                    DELETE FROM subscriptions WHERE owner = ?
                      AND db IN (SELECT id FROM databases WHERE container = ? AND scope = 'public')
                    """,
                arguments: [owner, container])
            for table in ["notifications", "notification_users", "push_devices", "push_tokens"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE container = ? AND user = ?", arguments: [container, owner])
            }
            let sessions = try String.fetchAll(
                db, sql: "SELECT id FROM sessions WHERE user_name = ? AND container = ? AND revoked_at IS NULL",
                arguments: [userName, container])
            try db.execute(
                sql: "DELETE FROM sessions WHERE user_name = ? AND container = ?", arguments: [userName, container])
            try db.execute(
                sql: "DELETE FROM user_identities WHERE user_name = ? AND container = ?", arguments: [userName, container])
            let elsewhere = try Bool.fetchOne(
                db, sql: "SELECT 1 FROM user_identities WHERE user_name = ?", arguments: [userName]) ?? false
            if !elsewhere {
                for table in ["user_logins", "one_time_codes", "sessions"] {
                    try db.execute(sql: "DELETE FROM \(table) WHERE user_name = ?", arguments: [userName])
                }
                try db.execute(sql: "DELETE FROM users WHERE name = ?", arguments: [userName])
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
