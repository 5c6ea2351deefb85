import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import Testing

@Suite("Replays of schedules that once failed")
struct ReplayTests {
    static let configuration = ConvergenceTests.configuration

    func record(_ name: String, _ title: String, _ step: Int64) -> LocalRecord {
        LocalRecord(
            zoneName: "ReadingList", recordName: name, recordType: "Bookmark",
            fields: ["title": .string(title), "editedAt": .timestamp(step)])
    }

    /// A record a device created (learned from its own send, not the feed) and another device
    /// deleted before the first fetched again: the feed leaves out records created and deleted
    /// since a token, so the engine must notice the copy did not come back.
    @Test func aRecordCreatedHereAndDeletedElsewhereBeforeTheNextFetchDisappears() async throws {
        try await SyncHarness.with { harness in
            let (d0, _) = try harness.engine("d0", configuration: Self.configuration)
            let (d1, _) = try harness.engine("d1", configuration: Self.configuration)
            try await d0.start()
            try await d1.start()
            try d1.store.write { _, outbox in try outbox.save(record("r3", "d1@32", 32)) }
            try await d1.sendChanges()
            try await d0.fetchChanges()
            try d0.store.write { _, outbox in try outbox.delete(zone: "ReadingList", recordName: "r3") }
            try await d0.sendChanges()
            try await d1.fetchChanges()
            #expect(try d0.store.record(zone: "ReadingList", name: "r3") == nil)
            #expect(try d1.store.record(zone: "ReadingList", name: "r3") == nil)
        }
    }

    /// Deleting a record that only existed on this device does not delete another device's
    /// record that happens to have the same name; and a delete of an old version loses to a
    /// newer edit (seed 42 once lost an edit that way).
    @Test func staleDeletesLoseToNewerEdits() async throws {
        try await SyncHarness.with { harness in
            let (d0, _) = try harness.engine("d0", configuration: Self.configuration)
            let (d1, _) = try harness.engine("d1", configuration: Self.configuration)
            try await d0.start()
            try await d1.start()
            try d1.store.write { _, outbox in try outbox.save(record("r3", "d1@32", 32)) }
            try d0.store.write { _, outbox in
                try outbox.save(record("r3", "d0@42", 42))
                try outbox.delete(zone: "ReadingList", recordName: "r3")
            }
            try await d1.sendChanges()
            try await d0.fetchChanges()
            try await d0.sendChanges()
            try await d1.fetchChanges()
            #expect(try d0.store.record(zone: "ReadingList", name: "r3")?.fields["title"] == "d1@32")
            #expect(try d1.store.record(zone: "ReadingList", name: "r3")?.fields["title"] == "d1@32")

            // d0 deletes the version it saw; meanwhile d1 edits it again and sends first.
            try d0.store.write { _, outbox in try outbox.delete(zone: "ReadingList", recordName: "r3") }
            try d1.store.write { _, outbox in try outbox.save(record("r3", "d1@50", 50)) }
            try await d1.sendChanges()
            try await d0.sendChanges()
            try await d0.fetchChanges()
            #expect(try d0.store.record(zone: "ReadingList", name: "r3")?.fields["title"] == "d1@50")
            #expect(try d0.store.conflictLog().first?.resolutions.first?.policy == "edit beats a stale delete")
        }
    }
}
