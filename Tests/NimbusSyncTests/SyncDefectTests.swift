import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import Testing

/// Defects found in review (issue 15 §3), each reproduced through the engine's public API
/// against a real server.
@Suite("Sync engine defects")
struct SyncDefectTests {
    static let zones = ["ReadingList", "ReadingHistory"]

    func bookmark(_ name: String, _ title: String) -> LocalRecord {
        LocalRecord(zoneName: "ReadingList", recordName: name, recordType: "Bookmark", fields: ["title": .string(title)])
    }

    /// `discardLocal` promises that pending edits go to the quarantine; they used to be
    /// deleted with the zone's outbox.
    @Test func discardingALostZoneQuarantinesItsPendingEdits() async throws {
        try await SyncHarness.with { harness in
            let configuration = SyncConfiguration(zones: Self.zones, subscriptionID: nil, zoneLossPolicy: .discardLocal)
            let (a, _) = try harness.engine("A", configuration: configuration)
            try await a.start()
            try a.store.write { _, outbox in try outbox.save(bookmark("sent", "on the server")) }
            try await a.sendChanges()
            // Pending, not sent: an edit of a record the server has and a record it never saw.
            try a.store.write { _, outbox in
                try outbox.save(bookmark("sent", "edited offline"))
                try outbox.save(bookmark("new", "never sent"))
            }
            _ = try await harness.container(device: "admin").privateCloudDatabase.deleteRecordZone(
                withID: ZoneID(zoneName: "ReadingList"))
            try await a.fetchChanges()

            #expect(try a.store.records(inZone: "ReadingList").isEmpty)
            #expect(try a.store.pendingCount() == 0)
            let quarantined = try a.store.quarantined().filter(\.pending)
            #expect(Set(quarantined.map(\.record.recordName)) == ["sent", "new"])
            #expect(quarantined.first { $0.record.recordName == "sent" }?.record.fields["title"] == "edited offline")
        }
    }

    /// The send loop used to stop silently after 1,000 rounds (re-reading the whole outbox
    /// each round): an outbox of any size drains.
    @Test func anOutboxOfMoreThanAThousandBatchesDrains() async throws {
        try await SyncHarness.with { harness in
            var configuration = SyncConfiguration(zones: Self.zones, subscriptionID: nil)
            configuration.batchSize = 1
            let (a, service) = try harness.engine("A", configuration: configuration)
            try await a.start()
            let count = 1_050
            try a.store.write { _, outbox in
                for index in 0..<count { try outbox.save(bookmark(String(format: "r%05d", index), "t\(index)")) }
            }
            try await a.sendChanges()
            #expect(try a.store.pendingCount() == 0)
            #expect(service.calls("modify") == count)
        }
    }

    /// A fetch started by a push has no caller to throw to: its failure is an event.
    @Test func aFailedPushTriggeredFetchIsReportedAsAnEvent() async throws {
        try await SyncHarness.with { harness in
            let (a, service) = try harness.engine("A", configuration: SyncConfiguration(zones: Self.zones))
            try await a.start()
            let events = a.events()
            service.fail("databaseChanges", with: NimbusError(.permissionFailure, "injected"))
            let (notifications, push) = AsyncStream<PushNotification>.makeStream()
            await a.listen(to: notifications)
            push.yield(try PushNotification(payload: Data(#"{"ck":{"met":{"dbs":1}}}"#.utf8)))
            let event = try await firstEvent(events) { if case .fetchFailed = $0 { return true } else { return false } }
            guard case .fetchFailed(let error) = event else { return }
            #expect((error as? NimbusError)?.code == .permissionFailure)
            push.finish()
            await a.stopListening()
        }
    }

    /// Apps observe the local store through a supported API, not the engine's tables: each
    /// committed transaction names the records it changed (a local edit, a send, a fetch).
    @Test func theStoreReportsTheRecordsEachTransactionChanged() async throws {
        try await SyncHarness.with { harness in
            let configuration = SyncConfiguration(zones: Self.zones, subscriptionID: nil)
            let (a, _) = try harness.engine("A", configuration: configuration)
            let (b, _) = try harness.engine("B", configuration: configuration)
            try await a.start()
            try await b.start()
            var onA = a.store.changes().makeAsyncIterator()
            var onB = b.store.changes().makeAsyncIterator()
            let id = LocalRecordID(zoneName: "ReadingList", recordName: "observed")

            try a.store.write { _, outbox in try outbox.save(bookmark("observed", "v1")) }
            #expect(await onA.next() == [id])  // the local edit
            try await a.sendChanges()
            #expect(await onA.next() == [id])  // the send settled: a server copy, no longer pending
            try await b.fetchChanges()
            #expect(await onB.next() == [id])  // fetched
            #expect(try b.store.record(zone: "ReadingList", name: "observed")?.fields["title"] == "v1")
        }
    }
}
