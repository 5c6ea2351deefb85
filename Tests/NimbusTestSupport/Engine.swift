import Foundation
import Logging
import NimbusEngines
import NimbusMemory
import NimbusPostgres
import NimbusStore
import Testing

/// The storage engines the test suites run on: every `@Test(arguments: Engine.available)`
/// runs once per engine, so the engines meet one suite, not copies of it.
///
/// SQLite always runs. PostgreSQL runs when `NIMBUS_TEST_POSTGRES_URL` names a server
/// (`.ci/run` starts a throwaway one; CI also sets `NIMBUS_REQUIRE_POSTGRES=1`, so a missing
/// one fails instead of skipping); each test gets a schema of its own, dropped afterwards.
/// ``memory`` is the in-memory record store (the storage core's rules with no SQL and no
/// I/O): store-level tests of ``RecordStore`` add it with ``withMemory``; it holds records
/// only, so it has no ``StorageLocation`` and runs no server.
///
/// ```swift
/// @Test(arguments: Engine.available)
/// func savesARecord(engine: Engine) async throws {
///     try await engine.withStore { store in /* any NimbusStorage */ }
/// }
/// ```
public enum Engine: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres
    case memory

    /// The PostgreSQL server the PostgreSQL cases use, if any (`NIMBUS_TEST_POSTGRES_URL`).
    public static let postgresURL: String? = ProcessInfo.processInfo.environment["NIMBUS_TEST_POSTGRES_URL"].flatMap {
        $0.isEmpty ? nil : $0
    }

    /// Set by CI (`NIMBUS_REQUIRE_POSTGRES=1`): a missing PostgreSQL is a failure there, never a skip.
    public static let postgresRequired = ProcessInfo.processInfo.environment["NIMBUS_REQUIRE_POSTGRES"] == "1"

    /// What the skipped PostgreSQL cases say.
    public static let postgresHowTo: Comment = """
        PostgreSQL cases skipped: start a throwaway PostgreSQL (as .ci/run does) and set \
        NIMBUS_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:PORT/postgres
        """

    /// The real engines this run can reach: SQLite, and PostgreSQL when configured.
    public static var available: [Engine] { postgresURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    /// The in-memory record store and the real engines this run can reach, for tests of
    /// ``RecordStore`` (run them with ``withRecordStore(clock:_:)``).
    public static var withMemory: [Engine] { [.memory] + available }

    /// A logger for servers and stores under test: only what would be a crash.
    public static let quietLogger: Logger = {
        var logger = Logger(label: "nimbus-test")
        logger.logLevel = .critical
        return logger
    }()

    public var testDescription: String { rawValue }

    /// Fresh, empty storage for one test: a new data directory, or a new PostgreSQL schema.
    /// Throws for ``memory``, which has no storage location.
    public func freshStorage() throws -> StorageLocation {
        let id = Self.freshID()
        return try storage(id: id, sqliteDirectory: Self.scratchDirectory(id))
    }

    /// Opens fresh, empty storage of this engine whose clock is `clock`, runs `body` with it,
    /// then closes it and removes its data, also when `body` throws. Throws for ``memory``
    /// (use ``withRecordStore(clock:_:)``).
    public func withStore<T>(clock: WallClock = .system, _ body: (any NimbusStorage) async throws -> T) async throws -> T {
        let location = try freshStorage()
        let store: any NimbusStorage
        switch location {
        case .sqlite:
            store = try await location.open(logger: Self.quietLogger, clock: clock)
        case .postgres(let url, let schema):
            // Few connections: many store tests run at once against one PostgreSQL.
            store = try await PostgresStore.open(
                url: url, schema: schema, maximumConnections: 4, clock: clock, logger: Self.quietLogger)
        }
        return try await scoped { try await body(store) } cleanup: {
            var failure: (any Error)?
            do { try await store.shutdown() } catch { failure = error }
            do { try await location.removeAll(logger: Self.quietLogger) } catch { failure = failure ?? error }
            if let failure { throw failure }
        }
    }

    /// Opens a fresh, empty record store of this engine (``memory`` included) whose clock is
    /// `clock`, runs `body` with it, then closes it and removes its data, also when `body` throws.
    public func withRecordStore<T>(clock: WallClock = .system, _ body: (any RecordStore) async throws -> T) async throws -> T {
        switch self {
        case .memory: return try await body(MemoryRecordStore(clock: clock))
        case .sqlite, .postgres: return try await withStore(clock: clock) { try await body($0) }
        }
    }

    /// The storage of this engine for the test named `id`: `sqliteDirectory` for SQLite, a
    /// schema named for `id` for PostgreSQL.
    func storage(id: String, sqliteDirectory: String) throws -> StorageLocation {
        switch self {
        case .sqlite:
            return .sqlite(directory: sqliteDirectory)
        case .postgres:
            return .postgres(url: Self.postgresURL ?? "", schema: "nimbus_test_\(id.prefix(16))")
        case .memory:
            throw MemoryHasNoLocation()
        }
    }

    /// A temporary directory for the test named `id`.
    static func scratchDirectory(_ id: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-test-\(id)").path
    }

    /// A name no other test uses (lowercase hex, as PostgreSQL schema names want it).
    static func freshID() -> String {
        UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }
}

/// Asked for the storage location or the full storage of ``Engine/memory``, which keeps records only.
struct MemoryHasNoLocation: Error, CustomStringConvertible {
    var description: String {
        "the in-memory engine keeps records only: it has no storage location, full storage or server; use withRecordStore"
    }
}
