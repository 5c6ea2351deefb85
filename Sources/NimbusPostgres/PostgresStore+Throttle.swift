import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: ThrottleStore {
    /// Schema 14: each container environment's request limits (``ThrottleLimits``), as
    /// SQLite's "v12-throttle-settings"; a `NULL` column is the server's default. Re-runnable.
    static let throttleSettingsMigration = Migration(
        version: 14,
        statements: [
            """
            CREATE TABLE IF NOT EXISTS container_throttle (
                container text COLLATE "C" NOT NULL REFERENCES containers(id),
                environment text COLLATE "C" NOT NULL,
                user_rate double precision, user_burst bigint,
                token_rate double precision, token_burst bigint,
                address_rate double precision, address_burst bigint,
                PRIMARY KEY (container, environment)
            )
            """
        ])

    public func throttleLimits(container: String, environment: ContainerEnvironment) async throws -> ThrottleLimits {
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            guard
                let row = try await transaction.rows(
                    """
                    SELECT user_rate, user_burst, token_rate, token_burst, address_rate, address_burst
                    FROM container_throttle WHERE container = \(container) AND environment = \(environment.rawValue)
                    """
                ).first
            else { return ThrottleLimits() }
            let (userRate, userBurst, tokenRate, tokenBurst, addressRate, addressBurst) = try row.decode(
                (Double?, Int64?, Double?, Int64?, Double?, Int64?).self)
            return ThrottleLimits(
                userRate: userRate, userBurst: userBurst.map { Int($0) }, tokenRate: tokenRate,
                tokenBurst: tokenBurst.map { Int($0) }, addressRate: addressRate, addressBurst: addressBurst.map { Int($0) })
        }
    }

    public func setThrottleLimits(_ limits: ThrottleLimits, container: String, environment: ContainerEnvironment)
        async throws
    {
        if let problem = limits.problem { throw AccountError(problem) }
        try await transaction { transaction in
            try await requireContainer(transaction, container)
            guard !limits.isEmpty else {
                try await transaction.rows(
                    "DELETE FROM container_throttle WHERE container = \(container) AND environment = \(environment.rawValue)")
                return
            }
            let bursts = [limits.userBurst, limits.tokenBurst, limits.addressBurst].map { $0.map { Int64($0) } }
            try await transaction.rows(
                """
                INSERT INTO container_throttle
                    (container, environment, user_rate, user_burst, token_rate, token_burst, address_rate, address_burst)
                VALUES (\(container), \(environment.rawValue), \(limits.userRate), \(bursts[0]), \(limits.tokenRate),
                    \(bursts[1]), \(limits.addressRate), \(bursts[2]))
                ON CONFLICT (container, environment) DO UPDATE SET user_rate = EXCLUDED.user_rate,
                    user_burst = EXCLUDED.user_burst, token_rate = EXCLUDED.token_rate,
                    token_burst = EXCLUDED.token_burst, address_rate = EXCLUDED.address_rate,
                    address_burst = EXCLUDED.address_burst
                """)
        }
    }
}
