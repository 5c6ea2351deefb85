import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: ThrottleStore {
    /// Schema v12 ("v12-throttle-settings"): each container environment's request limits
    /// (``ThrottleLimits``); a `NULL` column is the server's default.
    static func migrateV12ThrottleSettings(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE container_throttle (
                    container TEXT NOT NULL REFERENCES containers(id),
                    environment TEXT NOT NULL,
                    user_rate REAL, user_burst INTEGER,
                    token_rate REAL, token_burst INTEGER,
                    address_rate REAL, address_burst INTEGER,
                    PRIMARY KEY (container, environment)
                );
                """)
    }

    public func throttleLimits(container: String, environment: ContainerEnvironment) async throws -> ThrottleLimits {
        try await pool.read { db in
            try Self.requireContainer(db, container)
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT user_rate, user_burst, token_rate, token_burst, address_rate, address_burst
                        FROM container_throttle WHERE container = ? AND environment = ?
                        """,
                    arguments: [container, environment.rawValue])
            else { return ThrottleLimits() }
            return ThrottleLimits(
                userRate: row[0], userBurst: row[1], tokenRate: row[2], tokenBurst: row[3], addressRate: row[4],
                addressBurst: row[5])
        }
    }

    public func setThrottleLimits(_ limits: ThrottleLimits, container: String, environment: ContainerEnvironment)
        async throws
    {
        if let problem = limits.problem { throw AccountError(problem) }
        try await pool.write { db in
            try Self.requireContainer(db, container)
            guard !limits.isEmpty else {
                try db.execute(
                    sql: "DELETE FROM container_throttle WHERE container = ? AND environment = ?",
                    arguments: [container, environment.rawValue])
                return
            }
            try db.execute(
                sql: """
                    INSERT INTO container_throttle
                        (container, environment, user_rate, user_burst, token_rate, token_burst, address_rate, address_burst)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(container, environment) DO UPDATE SET user_rate = excluded.user_rate,
                        user_burst = excluded.user_burst, token_rate = excluded.token_rate,
                        token_burst = excluded.token_burst, address_rate = excluded.address_rate,
                        address_burst = excluded.address_burst
                    """,
                arguments: [
                    container, environment.rawValue, limits.userRate, limits.userBurst, limits.tokenRate,
                    limits.tokenBurst, limits.addressRate, limits.addressBurst,
                ])
        }
    }
}
