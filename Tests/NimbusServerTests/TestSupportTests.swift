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
        #expect(try await Self.schemaExists(storage) == false)
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

    @Test(.enabled(if: Engine.available.contains(.postgres), Engine.postgresHowTo))
    func aClusterStopsEveryNodeAndDropsItsSchemaWhenTheBodyThrows() async throws {
        var opened: (nodes: [RunningServer], storage: StorageLocation)?
        do {
            try await ServerHarness.with(.postgres, container: TestServer.container, nodes: 2) { harness in
                try await harness.startNode { $0.tracing.nodeName = "third" }
                opened = (harness.nodes, harness.storage)
                throw Failed()
            }
            Issue.record("the body's error was not thrown")
        } catch is Failed {}
        let (nodes, storage) = try #require(opened)
        #expect(Set(nodes.map(\.port)).count == 3, "three nodes, each on a port of its own")
        #expect(nodes.map(\.configuration.storage) == Array(repeating: storage, count: 3))
        #expect(nodes.last?.configuration.tracing.nodeName == "third")
        for node in nodes {
            // Returns at once for a stopped node; the bound only turns a running one into a failure.
            try await Self.guarded("node on port \(node.port) to have stopped") { try await node.waitUntilStopped() }
        }
        #expect(try await Self.schemaExists(storage) == false)
    }

    @Test(arguments: Engine.available)
    func aRestartWithAChangedConfigurationKeepsTheChange(engine: Engine) async throws {
        let past: Int64 = 1_000_000_000_000
        try await TestServer.with(engine) { server in
            let ana = try await server.user("ana")
            _ = try await ana.createZone("Z")
            try await server.harness.restart { $0.clock = ManualWallClock(millis: past).wallClock }
            let saved = try await ana.modify("Z", [op("create", "a")])
            #expect(saved.records.first?["created"]?["timestamp"]?.int64 == past, "\(saved.text)")
            // A plain restart keeps the changed clock.
            try await server.harness.restart()
            let again = try await ana.modify("Z", [op("create", "b")])
            #expect(again.records.first?["created"]?["timestamp"]?.int64 == past, "\(again.text)")
            // Nodes and restarts stay on the harness's storage, the only one it removes.
            let elsewhere = try engine.freshStorage()
            await #expect(throws: (any Error).self) { try await server.harness.startNode { $0.storage = elsewhere } }
            await #expect(throws: (any Error).self) { try await server.harness.restart { $0.storage = elsewhere } }
            #expect(server.harness.nodes.count == 1)
        }
    }

    /// Whether the PostgreSQL schema of `storage` exists, asked from a schema of its own
    /// (opening the dropped one would make it again).
    static func schemaExists(_ storage: StorageLocation) async throws -> Bool {
        guard case .postgres(_, let schema) = storage else { return false }
        let probe = try Engine.postgres.freshStorage()
        let left = try await StoredRows.integer(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '\(schema)'", on: probe)
        try await probe.removeAll(logger: Engine.quietLogger)
        return left != 0
    }

    /// Runs `body`, failing after 60 s: a guard against a hang, not a wait.
    static func guarded(_ what: String, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(60))
                throw TestTimeout("waited 60 s for the \(what)")
            }
            try await group.next()
            group.cancelAll()
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
