import Foundation
import GRDB
import NimbusStore

extension SQLiteStore {
    /// Schema v5: the server's secrets, and web push tokens only as issued.
    ///
    /// - `server_secrets`: named random secrets created once and kept with the data (so a
    ///   restart, a copy of the data directory or a restore keeps them). `change-tokens`
    ///   signs sync tokens (``ChangeTokens``).
    /// - `push_tokens` holds only tokens `tokens/create` issued from now on; earlier releases
    ///   also stored any token a client registered. Those rows were inserted registered
    ///   (`registered_at = created_at`) and are removed; a token issued and registered within
    ///   the same millisecond goes too, and its client gets NOT_FOUND from its courier and
    ///   asks `tokens/create` again.
    static func migrateV5(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE server_secrets (
                    name TEXT PRIMARY KEY,
                    secret BLOB NOT NULL,
                    created_at INTEGER NOT NULL
                );
                DELETE FROM push_tokens WHERE registered_at = created_at;
                """)
    }

    /// The name of the secret that signs sync tokens.
    static let changeTokenSecretName = "change-tokens"

    /// The store's secret for sync tokens: the one in the file, or `candidate` stored at `now`
    /// when the file has none.
    static func changeTokenSecret(_ pool: DatabasePool, candidate: [UInt8], now: Int64) throws -> [UInt8] {
        try pool.write { db in
            try db.execute(
                sql: "INSERT INTO server_secrets (name, secret, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
                arguments: [changeTokenSecretName, Data(candidate), now])
            guard let secret = try Data.fetchOne(
                db, sql: "SELECT secret FROM server_secrets WHERE name = ?", arguments: [changeTokenSecretName]),
                secret.count == ChangeTokens.secretByteCount
            else {
                throw DatabaseError(
                    resultCode: .SQLITE_CORRUPT,
                    message: "the server secret '\(changeTokenSecretName)' is missing or not \(ChangeTokens.secretByteCount) bytes")
            }
            return Array(secret)
        }
    }
}
