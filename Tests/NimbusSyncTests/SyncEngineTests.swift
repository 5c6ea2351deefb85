import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusSync
import NimbusTestSupport
import Testing

@Suite("Sync engine against a real server")
struct SyncEngineTests {
    static let zones = ["ReadingList", "ReadingHistory"]
    static let configuration = SyncConfiguration(zones: zones, subscriptionID: nil)

    func bookmark(_ name: String, _ title: String, zone: String = "ReadingList") -> LocalRecord {
        LocalRecord(zoneName: zone, recordName: name, recordType: "Bookmark", fields: ["title": .string(title)])
    }

    @Test func anEditOnOneDeviceReachesTheOtherAndEchoesAreNotReported() async throws {
        try await SyncHarness.with { harness in
            let (a, _) = try harness.engine("A", configuration: Self.configuration)
            let (b, _) = try harness.engine("B", configuration: Self.configuration)
            try await a.start()
            try await b.start()
            let aEvents = a.events()
            let bEvents = b.events()
            try a.store.write { _, outbox in try outbox.save(bookmark("article-1", "Sync is hard")) }
            try await a.sendChanges()
            #expect(try a.store.pendingCount() == 0)

            try await b.fetchChanges()
            let event = try await firstEvent(bEvents) { if case .fetched = $0 { return true } else { return false } }
            guard case .fetched(let zone, let saved, _) = event else { return }
            #expect(zone == "ReadingList")
            #expect(saved.map(\.recordName) == ["article-1"])
            #expect(try b.store.record(zone: "ReadingList", name: "article-1")?.fields["title"] == "Sync is hard")

            // A's own change coming back is not a remote edit.
            try await a.fetchChanges()
            try await a.sendChanges()
            let aFetched = try? await firstEvent(aEvents, timeout: .milliseconds(300)) {
                if case .fetched = $0 { return true } else { return false }
            }
            #expect(aFetched == nil)
        }
    }

    @Test func saveThenDeleteSendsOnlyTheDeleteAndDeleteThenSaveOnlyTheSave() async throws {
        try await SyncHarness.with { harness in
            let (a, service) = try harness.engine("A", configuration: Self.configuration)
            try await a.start()
            try a.store.write { _, outbox in try outbox.save(bookmark("kept", "v1")) }
            try await a.sendChanges()
            let before = service.calls("modify")

            // Save then delete before sending: one pending delete.
            try a.store.write { _, outbox in
                try outbox.save(bookmark("kept", "v2"))
                try outbox.delete(zone: "ReadingList", recordName: "kept")
            }
            let pending = try a.store.pendingChanges()
            #expect(pending.map(\.kind) == [.delete])
            // Delete then save: one pending save.
            try a.store.write { _, outbox in
                try outbox.delete(zone: "ReadingList", recordName: "other")
                try outbox.save(bookmark("other", "new"))
            }
            #expect(try a.store.pendingChanges().map(\.kind) == [.delete, .save])
            try await a.sendChanges()
            #expect(service.calls("modify") == before + 1)
            #expect(try a.store.record(zone: "ReadingList", name: "kept") == nil)
            #expect(try a.store.record(zone: "ReadingList", name: "other")?.isPending == false)
        }
    }

    @Test func triggersThatArriveDuringAFetchCoalesceIntoOneFollowUp() async throws {
        try await SyncHarness.with { harness in
            let (a, _) = try harness.engine("A", configuration: Self.configuration)
            try await a.start()
            let before = await a.fetchesRun
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 { group.addTask { try await a.fetchChanges() } }
                try await group.waitForAll()
            }
            let ran = await a.fetchesRun - before
            #expect(ran >= 1 && ran <= 2, "20 triggers ran \(ran) fetches")
        }
    }

    @Test func refreshingOneZoneFetchesOnlyThatZone() async throws {
        try await SyncHarness.with { harness in
            let (a, service) = try harness.engine("A", configuration: Self.configuration)
            try await a.start()
            let history = service.calls("zoneChanges:ReadingHistory")
            let database = service.calls("databaseChanges")
            try await a.refresh(zone: "ReadingList")
            #expect(service.calls("zoneChanges:ReadingHistory") == history)
            #expect(service.calls("databaseChanges") == database)
            #expect(service.calls("zoneChanges:ReadingList") >= 1)
        }
    }

    @Test func concurrentEditsMergeByPolicyAndAreLogged() async throws {
        try await SyncHarness.with { harness in
            var configuration = Self.configuration
            configuration.mergeRules = ["Bookmark": MergeRules(fields: ["title": .serverWins, "reads": .counter])]
            let (a, _) = try harness.engine("A", configuration: configuration)
            let (b, _) = try harness.engine("B", configuration: configuration)
            try await a.start()
            try await b.start()
            try a.store.write { _, outbox in
                try outbox.save(LocalRecord(zoneName: "ReadingList", recordName: "r", recordType: "Bookmark", fields: ["title": "t0", "reads": 0, "note": "n0"]))
            }
            try await a.sendChanges()
            try await b.fetchChanges()
            // Both edit the same record at once.
            try a.store.write { _, outbox in
                try outbox.save(LocalRecord(zoneName: "ReadingList", recordName: "r", recordType: "Bookmark", fields: ["title": "from A", "reads": 2, "note": "n0"]))
            }
            try b.store.write { _, outbox in
                try outbox.save(LocalRecord(zoneName: "ReadingList", recordName: "r", recordType: "Bookmark", fields: ["title": "from B", "reads": 3, "note": "B note"]))
            }
            try await a.sendChanges()
            try await b.sendChanges()  // CONFLICT → merge → resend
            try await a.fetchChanges()
            let onA = try #require(try a.store.record(zone: "ReadingList", name: "r"))
            let onB = try #require(try b.store.record(zone: "ReadingList", name: "r"))
            #expect(onA.fields == onB.fields)
            #expect(onB.fields["title"] == "from A")  // server (A) wins
            #expect(onB.fields["reads"] == 5)  // both increments kept
            #expect(onB.fields["note"] == "B note")  // only B changed it
            let log = try b.store.conflictLog()
            #expect(log.first?.recordName == "r")
            #expect(Set(log.first?.resolutions.map(\.field) ?? []) == ["title", "reads"])
        }
    }

    @Test func batchesSplitOnLimitExceededAndThrottlingIsRetried() async throws {
        try await SyncHarness.with { harness in
            let (a, service) = try harness.engine("A", configuration: Self.configuration, seed: 7, throttleRate: 0.3, maxBatch: 30)
            try await a.start()
            try a.store.write { _, outbox in
                for index in 0..<100 { try outbox.save(bookmark("r\(index)", "t\(index)")) }
            }
            try await a.sendChanges()
            #expect(try a.store.pendingCount() == 0)
            #expect(service.calls("modify") > 4)
            let (b, _) = try harness.engine("B", configuration: Self.configuration)
            try await b.start()
            #expect(try b.store.records(inZone: "ReadingList").count == 100)
        }
    }

    @Test func expiredTokensRefetchAndReconcileWithoutLosingPendingEdits() async throws {
        try await SyncHarness.with(retention: .zero) { harness in
            let (a, _) = try harness.engine("A", configuration: Self.configuration)
            let (b, _) = try harness.engine("B", configuration: Self.configuration)
            try await a.start()
            try await b.start()
            try a.store.write { _, outbox in
                for name in ["x", "y", "z"] { try outbox.save(bookmark(name, name)) }
            }
            try await a.sendChanges()
            try await b.fetchChanges()
            // A deletes y; B has a pending edit of z; the server compacts the tombstone.
            try a.store.write { _, outbox in try outbox.delete(zone: "ReadingList", recordName: "y") }
            try await a.sendChanges()
            try b.store.write { _, outbox in try outbox.save(bookmark("z", "edited on B")) }
            try await harness.server.compactNow()
            try await b.fetchChanges()  // B's token is now expired
            #expect(try b.store.record(zone: "ReadingList", name: "y") == nil)
            #expect(try b.store.record(zone: "ReadingList", name: "z")?.fields["title"] == "edited on B")
            try await b.sendChanges()
            try await a.fetchChanges()
            #expect(try a.store.record(zone: "ReadingList", name: "z")?.fields["title"] == "edited on B")
        }
    }

    @Test func aZoneDeletedOnTheServerIsRecreatedAndReuploaded() async throws {
        try await SyncHarness.with { harness in
            let (a, _) = try harness.engine("A", configuration: Self.configuration)
            try await a.start()
            try a.store.write { _, outbox in try outbox.save(bookmark("keep-me", "precious")) }
            try await a.sendChanges()
            _ = try await harness.container(device: "admin").privateCloudDatabase.deleteRecordZone(withID: ZoneID(zoneName: "ReadingList"))
            try await a.fetchChanges()
            try await a.sendChanges()
            let (fresh, _) = try harness.engine("fresh", configuration: Self.configuration)
            try await fresh.start()
            #expect(try fresh.store.record(zone: "ReadingList", name: "keep-me")?.fields["title"] == "precious")
        }
    }

    @Test func anAccountSwitchQuarantinesLocalDataInsteadOfDeletingIt() async throws {
        try await SyncHarness.with { harness in
            let (a, _) = try harness.engine("A", configuration: Self.configuration)
            try await a.start()
            try a.store.write { _, outbox in try outbox.save(bookmark("mine", "unsent")) }
            let other = try await harness.server.store.createUser(
                name: "someone-else", email: nil, firstName: nil, lastName: nil, container: SyncHarness.containerID)
            let (switched, _) = try harness.engine("A", configuration: Self.configuration, webToken: other.token)
            let events = switched.events()
            try await switched.start()
            let event = try await firstEvent(events) { if case .accountChanged = $0 { return true } else { return false } }
            guard case .accountChanged(_, let to) = event else { return }
            #expect(to == other.user?.recordName)
            #expect(try switched.store.records(inZone: "ReadingList").isEmpty)
            let quarantined = try switched.store.quarantined()
            #expect(quarantined.contains { $0.record.recordName == "mine" && $0.pending })
        }
    }

    @Test func theInSyncCheckFindsAndRepairsDifferences() async throws {
        try await SyncHarness.with { harness in
            let (a, _) = try harness.engine("A", configuration: Self.configuration)
            try await a.start()
            try a.store.write { _, outbox in try outbox.save(bookmark("one", "1")) }
            try await a.sendChanges()
            // Someone writes behind the device's back; the device misses the push.
            let direct = harness.container(device: "web").privateCloudDatabase
            var record = Nimbus.Record(recordType: "Bookmark", recordID: .init(recordName: "two", zoneID: ZoneID(zoneName: "ReadingList")))
            record.setFieldValue("2", forKey: "title")
            _ = try await direct.save(record)
            let report = try await a.check(zone: "ReadingList", repair: true)
            #expect(report.missingLocally == ["two"])
            #expect(!report.isInSync)
            #expect(try await a.check(zone: "ReadingList").isInSync)
            #expect(try a.store.record(zone: "ReadingList", name: "two") != nil)
        }
    }
}
