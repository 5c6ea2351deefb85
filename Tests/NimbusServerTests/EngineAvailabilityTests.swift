import NimbusEngines
import NimbusStore
import NimbusTestSupport
import Testing

/// The PostgreSQL (and S3) cases of the suite run, or CI says why not.
@Suite("Engines")
struct EngineAvailabilityTests {
    /// Runs only with a PostgreSQL to run on; otherwise its skip message says how to get one.
    @Test("the configured PostgreSQL opens as the postgres engine", .enabled(if: Engine.postgresURL != nil, Engine.postgresHowTo))
    func postgresCasesRun() async throws {
        #expect(Engine.available.contains(.postgres))
        let storage = try Engine.postgres.freshStorage()
        let store = try await storage.open(logger: TestServer.quietLogger)
        #expect(store.engineName == "postgres")
        try await store.shutdown()
        try await storage.removeAll(logger: TestServer.quietLogger)
    }

    @Test("CI never skips the PostgreSQL cases", .enabled(if: Engine.postgresRequired))
    func ciHasPostgres() {
        #expect(Engine.postgresURL != nil, "NIMBUS_REQUIRE_POSTGRES=1 but NIMBUS_TEST_POSTGRES_URL is not set")
    }

    @Test("CI never skips the S3 cases", .enabled(if: TestObjectStore.required))
    func ciHasAnObjectStore() {
        #expect(TestObjectStore.location != nil, "NIMBUS_REQUIRE_S3=1 but NIMBUS_TEST_S3_URL names no S3 server")
    }
}
