import Foundation
import Logging
import Nimbus
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusSync
import NimbusTestSupport
import Testing

/// Two server nodes on one PostgreSQL database: device A writes through node 1, device B is
/// connected to node 2. The push travels between the nodes with its trace context, node 2 records
/// its push hop, and either node's store shows the whole path.
@Suite("Tracing across nodes")
struct MultiNodeTraceTests {
    @Test(.enabled(if: Engine.postgresURL != nil, Engine.postgresHowTo))
    func thePushHopIsRecordedByTheNodeThatDeliversIt() async throws {
        try await SyncHarness.with(engine: .postgres, configure: { $0.tracing.nodeName = "node-1" }) { harness in
            // A second node on the same database; the harness stops it with the first.
            let node2 = try await harness.harness.startNode { $0.tracing.nodeName = "node-2" }
            let configuration = SyncConfiguration(zones: ["ReadingList"])
            let (a, _) = try harness.engine("A", configuration: configuration)
            let bContainer = Container(
                identifier: SyncHarness.containerID, baseURL: URL(string: node2.baseURL)!,
                credentials: .apiToken(harness.apiToken, webAuthToken: harness.webToken), deviceID: "B")
            let b = SyncEngine(
                service: DatabaseSyncService(database: bContainer.privateCloudDatabase),
                store: try LocalStore(path: harness.storePath("B"), clock: SyncHarness.noWaiting),
                configuration: configuration)
            try await a.start()
            try await b.start()
            let feed = try await PushFeed.connect(bContainer)
            defer { feed.stop() }
            await b.listen(to: feed.notifications)
            let applied = node2.traces.spans { $0.name == "sync.apply" && $0.recordNames.contains("across") }

            try a.store.write { _, outbox in
                try outbox.save(LocalRecord(zoneName: "ReadingList", recordName: "across", recordType: "Bookmark", fields: [:]))
            }
            try await a.sendChanges()
            let report = try #require(try await first(applied))
            await harness.server.traces.flush()
            await node2.traces.flush()

            let view = try await node2.store.traceView(of: report.traceID)
            #expect(view.stop == .applied, "\(view.text)")
            let sources = Dictionary(grouping: view.hops, by: \.span.name).mapValues { Set($0.map(\.span.source)) }
            #expect(sources["records/modify"] == ["server node-1"], "\(view.text)")
            #expect(sources["commit"] == ["server node-1"])
            #expect(sources["push"]?.contains("server node-2") == true, "\(view.text)")
            #expect(sources["sync.apply"] == ["device B"])
            await b.stopListening()
        }
    }
}
