import Foundation
import NimbusEngines
import NimbusServer
import NimbusStore
import Testing

/// The storage engines the server's behaviour suite runs on: every `@Test(arguments:
/// Engine.available)` runs once per engine, so both engines meet one suite, not copies.
///
/// PostgreSQL cases run when `NIMBUS_TEST_POSTGRES_URL` names a server (`.ci/run` starts a
/// throwaway one); each test gets a fresh schema, dropped afterwards.
enum Engine: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    /// The PostgreSQL server the PostgreSQL cases use, if any.
    static let postgresURL: String? = ProcessInfo.processInfo.environment["NIMBUS_TEST_POSTGRES_URL"].flatMap {
        $0.isEmpty ? nil : $0
    }

    /// Set by CI: a missing PostgreSQL is a failure there, never a skip.
    static let postgresRequired = ProcessInfo.processInfo.environment["NIMBUS_REQUIRE_POSTGRES"] == "1"

    /// What the skipped PostgreSQL cases say.
    static let postgresHowTo: Comment = """
        PostgreSQL cases skipped: start a throwaway PostgreSQL (as .ci/run does) and set \
        NIMBUS_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:PORT/postgres
        """

    /// The engines this run can reach.
    static var available: [Engine] { postgresURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    var testDescription: String { rawValue }

    /// Fresh, empty storage for one test (a new data directory, or a new schema).
    func freshStorage() -> StorageLocation {
        let id = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        switch self {
        case .sqlite:
            return .sqlite(directory: FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-test-\(id)").path)
        case .postgres:
            return .postgres(url: Engine.postgresURL ?? "", schema: "nimbus_test_\(id.prefix(16))")
        }
    }
}

/// The PostgreSQL cases of the suite run, or CI says why not.
@Suite("Engines")
struct EngineAvailabilityTests {
    /// Runs only with a PostgreSQL to run on; otherwise its skip message says how to get one.
    @Test("the configured PostgreSQL opens as the postgres engine", .enabled(if: Engine.postgresURL != nil, Engine.postgresHowTo))
    func postgresCasesRun() async throws {
        #expect(Engine.available.contains(.postgres))
        let storage = Engine.postgres.freshStorage()
        let store = try await storage.open(logger: TestServer.quietLogger)
        #expect(store.engineName == "postgres")
        try await store.shutdown()
        try await storage.removeAll(logger: TestServer.quietLogger)
    }

    @Test("CI never skips the PostgreSQL cases", .enabled(if: Engine.postgresRequired))
    func ciHasPostgres() {
        #expect(Engine.postgresURL != nil, "NIMBUS_REQUIRE_POSTGRES=1 but NIMBUS_TEST_POSTGRES_URL is not set")
    }
}
