import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import Testing

@Suite("Fetch on push")
struct PushTriggeredSyncTests {
    /// The News-app loop: a zone change on device A reaches device B through the database
    /// subscription's silent push and one fetch, with no polling.
    @Test func aSaveOnOneDeviceArrivesOnTheOtherThroughAPush() async throws {
        try await SyncHarness.with { harness in
            let configuration = SyncConfiguration(zones: ["ReadingList", "ReadingHistory"])
            let (a, _) = try harness.engine("A", configuration: configuration)
            let (b, _) = try harness.engine("B", configuration: configuration)
            try await a.start()
            try await b.start()
            // B's push channel is connected before A saves.
            let feed = try await PushFeed.connect(harness.container(device: "B"))
            defer { feed.stop() }
            await b.listen(to: feed.notifications)
            let events = b.events()

            let started = ContinuousClock.now
            try a.store.write { _, outbox in
                try outbox.save(
                    LocalRecord(zoneName: "ReadingList", recordName: "pushed", recordType: "Bookmark", fields: ["title": "hello"]))
            }
            try await a.sendChanges()
            _ = try await firstEvent(events) { event in
                if case .fetched(_, let saved, _) = event { return saved.contains { $0.recordName == "pushed" } }
                return false
            }
            let elapsed = ContinuousClock.now - started
            #expect(try b.store.record(zone: "ReadingList", name: "pushed")?.fields["title"] == "hello")
            // Nothing polls, so the push is what fetched it; the bound only catches a stall (the
            // latency itself is measured by `nimbus-bench sync`, not by a timed test).
            #expect(elapsed < .seconds(30))
            await b.stopListening()
        }
    }
}
