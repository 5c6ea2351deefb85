import Logging
import NimbusProtocol
import NimbusStore
import PostgresNIO

/// One open transaction on one pooled connection, handed to the body of
/// `PostgresStore.transaction(_:)`. Not `Sendable`: it lives only inside that body.
final class Transaction {
    let connection: PostgresConnection
    let logger: Logger
    /// End with ROLLBACK instead of COMMIT: the body decided nothing it did is to be kept
    /// (a modify that writes nothing gives back the version it allocated).
    var rollbackOnly = false

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Runs a statement and returns its rows.
    @discardableResult
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await connection.query(query, logger: logger).collect()
    }
}

extension PostgresStore {
    /// Runs `body` in one READ COMMITTED transaction and commits it (unless the body sets
    /// ``Transaction/rollbackOnly``); rolls back when it throws.
    ///
    /// READ COMMITTED is enough because every write transaction takes its database's row lock
    /// first (``lockDatabase(_:_:bump:)``): each later statement of the transaction takes a
    /// fresh snapshot, which includes every commit that held the lock before, so the rows the
    /// planner reads are the latest ones. A deadlock or serialization failure (possible only
    /// between maintenance and writes, which lock in the same order) retries the whole body.
    func transaction<T: Sendable>(_ body: (Transaction) async throws -> T) async throws -> T {
        try checkOpen()
        var attempt = 1
        while true {
            do {
                return try await client.withConnection { connection in
                    let transaction = Transaction(connection: connection, logger: self.logger)
                    try await transaction.rows("BEGIN")
                    do {
                        let value = try await body(transaction)
                        try await transaction.rows(transaction.rollbackOnly ? "ROLLBACK" : "COMMIT")
                        return value
                    } catch {
                        _ = try? await transaction.rows("ROLLBACK")
                        throw error
                    }
                }
            } catch let error as PSQLError where attempt < 5 && Self.isTransient(error) {
                logger.debug("postgres transaction retried", metadata: ["sqlstate": "\(error.serverInfo?[.sqlState] ?? "")"])
                attempt += 1
            } catch let error as PSQLError {
                throw Self.mapped(error)
            }
        }
    }

    /// Runs one statement outside a transaction (a read: one statement sees one snapshot).
    @discardableResult
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try checkOpen()
        do {
            return try await client.query(query, logger: logger).collect()
        } catch let error as PSQLError {
            throw Self.mapped(error)
        }
    }

    /// A value PostgreSQL cannot store (class 22, data exception: a NUL character in text,
    /// a number out of range) is the client's bad input, answered as BAD_REQUEST; any other
    /// error is the engine's.
    static func mapped(_ error: PSQLError) -> any Error {
        guard let state = error.serverInfo?[.sqlState], state.hasPrefix("22") else { return error }
        let message = error.serverInfo?[.message] ?? "invalid value"
        return CloudKitError(.badRequest, "a value in the request cannot be stored: \(message)")
    }

    /// Deadlock detected, serialization failure.
    static func isTransient(_ error: PSQLError) -> Bool {
        guard let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40P01" || state == "40001"
    }

    /// A unique constraint was violated.
    static func isUniqueViolation(_ error: any Error) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] == "23505"
    }

    // MARK: - Databases

    /// Takes the row lock of a database for this transaction, creating the database (and its
    /// default zone) on first use, and returns its id and version.
    ///
    /// With `bump`, this is the `UPDATE databases SET version = version + 1 … RETURNING
    /// version` every versioned write starts with: the returned version is the first one the
    /// transaction may use (the planner numbers its writes from there), and the lock is held
    /// until commit, so commits of one database are serialised and their versions become
    /// visible in order. Without `bump` the row is locked `FOR UPDATE` and keeps its version.
    func lockDatabase(_ transaction: Transaction, _ key: DatabaseKey, bump: Bool) async throws -> (
        id: Int64, version: Int64
    ) {
        for _ in 0..<2 {
            let locked =
                bump
                ? try await transaction.rows(Prepared<Statements.BumpDatabaseVersion>(key.parameters))
                : try await transaction.rows(
                    "SELECT id, version FROM databases WHERE \(database: key, qualifiedBy: nil) FOR UPDATE")
            if let row = locked.first {
                return try row.decode((Int64, Int64).self)
            }
            // First use: create it. A node creating it concurrently makes this wait for that
            // commit and then do nothing; the lock above then finds the row.
            try await transaction.rows(
                """
                WITH created AS (
                    INSERT INTO databases (container, environment, scope, owner)
                    VALUES (\(key.container), \(key.environment.rawValue), \(key.scope.rawValue), \(key.owner))
                    ON CONFLICT DO NOTHING RETURNING id)
                INSERT INTO zones (db, name, incarnation, change_version, meta_version)
                SELECT id, \(ZoneID.defaultZoneName), 0, 0, 0 FROM created
                """)
        }
        throw PostgresStoreError(.corruptRow, "the database row of \(key) could not be created")
    }
}

extension PostgresQuery.StringInterpolation {
    /// `d.container = $n AND d.environment = $n+1 AND d.scope = … AND d.owner = …`: the
    /// condition selecting one database row, its values bound as parameters.
    mutating func appendInterpolation(database key: DatabaseKey, qualifiedBy alias: String? = "d") {
        appendInterpolation(
            equal: [
                ("container", key.container), ("environment", key.environment.rawValue), ("scope", key.scope.rawValue),
                ("owner", key.owner),
            ], qualifiedBy: alias)
    }

    /// `a.column1 = $n AND a.column2 = $n+1 …`, the values bound as parameters.
    mutating func appendInterpolation(equal conditions: [(column: String, value: String)], qualifiedBy alias: String?) {
        let prefix = alias.map { $0 + "." } ?? ""
        for (index, condition) in conditions.enumerated() {
            appendLiteral("\(index == 0 ? "" : " AND ")\(prefix)\(condition.column) = ")
            appendInterpolation(condition.value)
        }
    }
}
