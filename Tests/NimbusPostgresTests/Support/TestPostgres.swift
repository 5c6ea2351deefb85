import Foundation
import Logging
import NimbusProtocol
import NimbusSQLite
import NimbusStore
import NimbusTestSupport
import PostgresNIO
import Testing

@testable import NimbusPostgres

/// The PostgreSQL the tests use, from `NIMBUS_TEST_POSTGRES_URL`. Without it the suite is
/// skipped: start a throwaway PostgreSQL as in `.ci/run` and set
/// `NIMBUS_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:PORT/postgres`.
enum TestPostgres {
    static var url: String? { Engine.postgresURL }

    static var isConfigured: Bool { url != nil }

    static let logger: Logger = {
        var logger = Logger(label: "nimbus.postgres.tests")
        logger.logLevel = .warning
        return logger
    }()

    /// A schema name no other test uses.
    static func freshSchema() -> String {
        "nimbus_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
    }

    static func open(schema: String, clock: WallClock = .system) async throws -> PostgresStore {
        try await PostgresStore.open(
            url: url ?? "", schema: schema, maximumConnections: 10, random: ParitySecret(), clock: clock, logger: logger)
    }

    /// Opens `count` stores (nodes) on one fresh schema, runs `body`, then shuts them down and
    /// drops the schema, also when `body` throws.
    static func withNodes<T: Sendable>(
        _ count: Int = 1, clock: WallClock = .system, _ body: ([PostgresStore]) async throws -> T
    ) async throws -> T {
        let schema = freshSchema()
        var stores: [PostgresStore] = []
        do {
            for _ in 0..<count { stores.append(try await open(schema: schema, clock: clock)) }
            let result = try await body(stores)
            try await close(stores, dropping: schema)
            return result
        } catch {
            try? await close(stores, dropping: schema)
            throw error
        }
    }

    static func close(_ stores: [PostgresStore], dropping schema: String) async throws {
        if let first = stores.first {
            try await first.rows("DROP SCHEMA \(unescaped: "\"\(schema)\"") CASCADE")
        } else {
            let store = try await open(schema: schema)
            try await store.rows("DROP SCHEMA \(unescaped: "\"\(schema)\"") CASCADE")
            try await store.shutdown()
        }
        for store in stores { try await store.shutdown() }
    }
}

/// Every PostgreSQL test; run one at a time so that the tests don't compete for connections
/// and CPU with each other (the concurrency tests make their own contention).
@Suite(
    "PostgreSQL engine", .serialized,
    .enabled(
        if: TestPostgres.isConfigured,
        "start a throwaway PostgreSQL as in .ci/run and set NIMBUS_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:PORT/postgres"
    ))
struct PostgresTests {}

extension DatabaseKey {
    static func privateDatabase(of owner: String) -> DatabaseKey {
        DatabaseKey(container: "iCloud.test", environment: .development, scope: .private, owner: owner)
    }
}

/// Shorthands for building requests.
enum Requests {
    static func record(
        _ name: String, type: String = "Item", tag: String? = nil, fields: [String: FieldValue] = [:]
    ) -> Record {
        Record(recordName: name, recordType: type, recordChangeTag: tag, fields: fields)
    }

    static func operation(_ type: RecordOperationType, _ record: Record) -> RecordOperation {
        RecordOperation(type: type, record: record)
    }

    static func policy(now: Int64 = 1_800_000_000_000) -> WritePolicy {
        WritePolicy(creatorOnlyWrites: false, now: now)
    }
}

/// Runs a script on a fresh SQLiteStore and on PostgreSQL, and records every line that differs.
enum Parity {
    static func expectSameAnswers(_ script: @Sendable (any NimbusStorage) async throws -> [String]) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-parity-\(UUID())")
        let sqlite = try SQLiteStore(directory: directory.path, random: ParitySecret(), clock: ParityScript.clock)
        let expected = try await script(sqlite)
        try await sqlite.shutdown()
        try? FileManager.default.removeItem(at: directory)

        let actual = try await TestPostgres.withNodes(clock: ParityScript.clock) { stores in try await script(stores[0]) }
        if ProcessInfo.processInfo.environment["NIMBUS_PARITY_DUMP"] != nil { print(actual.joined(separator: "\n")) }
        #expect(actual.count == expected.count)
        for (index, (got, want)) in zip(actual, expected).enumerated() where got != want {
            Issue.record("step \(index) differs:\n  postgres: \(got)\n  sqlite:   \(want)")
        }
    }
}

/// The server secret both engines get in these tests, so their sync tokens compare equal.
struct ParitySecret: RandomNumberGenerator {
    private var counter: UInt64 = 0
    mutating func next() -> UInt64 {
        counter &+= 1
        return counter &* 0x9E37_79B9_7F4A_7C15
    }
}
