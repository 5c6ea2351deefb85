import Foundation
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// The shared test support keeps its promises: what a harness opened is gone after it, also
/// when the test fails, and the in-memory engine is refused where it has nothing to give.
@Suite("Test support")
struct TestSupportTests {
    struct Failed: Error {}

    @Test(arguments: Engine.available)
    func aHarnessRemovesItsStorageAndDirectoryWhenTheBodyThrows(engine: Engine) async throws {
        var opened: (storage: StorageLocation, directory: String)?
        do {
            try await ServerHarness.with(engine, container: TestServer.container) { harness in
                _ = try await harness.server.store.createUser(
                    name: "ana", email: nil, firstName: nil, lastName: nil, container: harness.container)
                opened = (harness.storage, harness.directory)
                throw Failed()
            }
            Issue.record("the body's error was not thrown")
        } catch is Failed {}
        let (storage, directory) = try #require(opened)
        #expect(!FileManager.default.fileExists(atPath: directory))
        if case .postgres(_, let schema) = storage {
            // Asked from a schema of its own (opening the dropped one would make it again).
            let probe = try Engine.postgres.freshStorage()
            let left = try await StoredRows.integer(
                "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '\(schema)'", on: probe)
            try await probe.removeAll(logger: Engine.quietLogger)
            #expect(left == 0)
        }
    }

    @Test(arguments: Engine.available)
    func aRestartedServerKeepsItsDataAndPort(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let ana = try await server.user("ana")
            _ = try await ana.createZone("Z")
            _ = try await ana.modify("Z", [op("create", "kept")])
            let port = server.server.port
            try await server.harness.restart()
            #expect(server.server.port == port)
            #expect(try await ana.changes("Z").records.compactMap { $0["recordName"]?.string } == ["kept"])
        }
    }

    @Test func theInMemoryEngineHoldsRecordsOnly() async throws {
        #expect(Engine.withMemory == [.memory] + Engine.available)
        #expect(!Engine.available.contains(.memory))
        #expect(throws: (any Error).self) { try Engine.memory.freshStorage() }
        await #expect(throws: (any Error).self) { try await Engine.memory.withStore { _ in } }
        let alice = DatabaseKey(container: TestServer.container, environment: .development, scope: .private, owner: "_alice")
        let zones = try await Engine.memory.withRecordStore { store in try await store.listZones(in: alice) }
        #expect(zones == [.defaultZone])
    }
}
