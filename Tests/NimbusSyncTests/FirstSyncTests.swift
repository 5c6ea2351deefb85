import Foundation
import GRDB
import NIOConcurrencyHelpers
import Nimbus
import NimbusProtocol
import NimbusSync
import Testing

/// A new device's first sync of a zone larger than one page: progress as it goes, and a
/// sync stopped halfway that resumes from its last committed page.
@Suite("First sync of a large zone")
struct FirstSyncTests {
    static let configuration = SyncConfiguration(zones: ["ReadingList"], subscriptionID: nil)
    /// Five pages of the server's 200.
    static let records = 1_000

    /// Writes `records` bookmarks into the user's ReadingList zone from another device.
    func seed(_ harness: SyncHarness) async throws {
        let database = harness.container(device: "writer").privateCloudDatabase
        _ = try await database.modifyRecordZones(saving: [RecordZone(zoneName: "ReadingList")], deleting: [])
        let zoneID = ZoneID(zoneName: "ReadingList")
        for start in stride(from: 0, to: Self.records, by: 200) {
            let saving = (start..<start + 200).map { i in
                var record = Nimbus.Record(
                    recordType: "Bookmark", recordID: Nimbus.Record.ID(recordName: "bulk-\(i)", zoneID: zoneID))
                record.setFieldValue(.string("Article number \(i)"), forKey: "title")
                return record
            }
            let results = try await database.modifyRecords(saving: saving, atomically: false)
            for (_, result) in results.saveResults { _ = try result.get() }
        }
    }

    @Test func progressCountsRecordsAndBytesPageByPage() async throws {
        try await SyncHarness.with { harness in
            try await seed(harness)
            let (device, _) = try harness.engine("new", configuration: Self.configuration)
            let seen = NIOLockedValueBox<[FetchProgress]>([])
            let events = device.events()
            let listener = Task {
                for await event in events {
                    if case .fetchProgress(let progress) = event {
                        seen.withLockedValue { $0.append(progress) }
                        if !progress.moreComing { return }
                    }
                }
            }
            try await device.start()
            _ = await listener.value
            let reports = seen.withLockedValue { $0 }
            #expect(reports.map(\.records) == [200, 400, 600, 800, 1_000])
            #expect(reports.map(\.pages) == [1, 2, 3, 4, 5])
            #expect(reports.map(\.moreComing) == [true, true, true, true, false])
            // The server counted what followed the first page; the engine counts down from it.
            #expect(reports.map(\.remainingEstimate) == [800, 600, 400, 200, 0])
            #expect(reports.dropLast().allSatisfy { $0.estimatedSecondsLeft.map { $0 >= 0 } ?? ($0.updated == $0.started) })
            #expect(reports.allSatisfy { $0.zone == "ReadingList" })
            // Each page's answer is counted: a page of 200 bookmarks is well over 200 × 60 bytes.
            let bytes = reports.map(\.bytes)
            #expect(bytes.first.map { $0 > 200 * 60 } == true)
            #expect(zip(bytes, bytes.dropFirst()).allSatisfy { $0 < $1 })
            #expect(reports.allSatisfy { $0.updated >= $0.started })
            // Each report comes after its page is in the store.
            #expect(try await device.store.read { try LocalStore.serverCopyCount(in: $0, zone: "ReadingList") } == 1_000)
        }
    }

    @Test func aFirstSyncStoppedHalfwayResumesFromItsLastCommittedPage() async throws {
        try await SyncHarness.with { harness in
            try await seed(harness)
            do {
                // Two pages go through; the third request fails as if the app were killed there.
                let (device, service) = try harness.engine("new", configuration: Self.configuration)
                service.fail("zoneChanges:ReadingList", after: 2, with: NimbusError(.operationCancelled, "killed"))
                await #expect(throws: NimbusError.self) { try await device.start() }
                #expect(try await device.store.read { try LocalStore.serverCopyCount(in: $0, zone: "ReadingList") } == 400)
            }

            // Relaunched over the same store: only the pages after the last committed one.
            let (relaunched, service) = try harness.engine("new", configuration: Self.configuration)
            let last = NIOLockedValueBox<FetchProgress?>(nil)
            let events = relaunched.events()
            let listener = Task {
                for await event in events {
                    if case .fetchProgress(let progress) = event {
                        last.withLockedValue { $0 = progress }
                        if !progress.moreComing { return }
                    }
                }
            }
            try await relaunched.start()
            _ = await listener.value
            #expect(service.calls("zoneChanges:ReadingList") == 3)
            #expect(last.withLockedValue { $0?.records } == 600)
            #expect(last.withLockedValue { $0?.remainingEstimate } == 0)
            #expect(try await relaunched.store.read { try LocalStore.serverCopyCount(in: $0, zone: "ReadingList") } == 1_000)
            let names = try Set(relaunched.store.records(inZone: "ReadingList").map(\.recordName))
            #expect(names == Set((0..<Self.records).map { "bulk-\($0)" }))
        }
    }

    /// The engine writes each fetched record through a statement it binds itself; GRDB must
    /// still run it, so that an app's transaction observer on the store hears of every row.
    @Test func anAppsTransactionObserverHearsEveryFetchedRecord() async throws {
        try await SyncHarness.with { harness in
            try await seed(harness)
            let (device, _) = try harness.engine("new", configuration: Self.configuration)
            let observer = RecordRowObserver()
            try device.store.write { db, _ in db.add(transactionObserver: observer, extent: .observerLifetime) }
            try await device.start()
            let (inserted, commits) = observer.counts
            #expect(inserted == Self.records)
            #expect(commits >= 1)
        }
    }

    /// Pages read while the device's writer is busy are applied together, in one
    /// transaction, and each page is still reported on its own.
    @Test func pagesReadWhileTheWriterIsBusyAreAppliedInOneTransaction() async throws {
        try await SyncHarness.with { harness in
            try await seed(harness)
            let (device, service) = try harness.engine("new", configuration: Self.configuration)
            let observer = RecordRowObserver()
            try device.store.write { db, _ in db.add(transactionObserver: observer, extent: .observerLifetime) }
            // Another connection holds the store's write lock from the zone's first request
            // until the fifth page is asked for. The engine asks for a page only once the one
            // before the page it follows is read, so by then pages 2 and 3 are read, while
            // the first waits for the lock.
            var holding = Configuration()
            holding.allowsUnsafeTransactions = true
            let blocker = try DatabaseQueue(path: harness.storePath("new"), configuration: holding)
            service.whenCalled("zoneChanges:ReadingList") { call in
                if call == 1 { try blocker.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") } }
                if call == 5 { try blocker.writeWithoutTransaction { try $0.execute(sql: "ROLLBACK") } }
            }
            let reports = NIOLockedValueBox<[Int]>([])
            let events = device.events()
            let listener = Task {
                for await event in events {
                    if case .fetchProgress(let progress) = event {
                        reports.withLockedValue { $0.append(progress.records) }
                        if !progress.moreComing { return }
                    }
                }
            }
            try await device.start()
            _ = await listener.value
            let commits = observer.insertedPerCommit
            #expect(commits.reduce(0, +) == Self.records)
            // The first page waited for the lock; the pages read meanwhile shared a commit.
            #expect(commits.count < Self.records / 200, "records a commit: \(commits)")
            #expect(commits.contains { $0 >= 400 }, "records a commit: \(commits)")
            #expect(reports.withLockedValue { $0 } == [200, 400, 600, 800, 1_000])
        }
    }
}

/// Counts the rows inserted into the engine's record copies, and the commits that changed them.
private final class RecordRowObserver: TransactionObserver, Sendable {
    private let state = NIOLockedValueBox<(inserted: Int, pending: Int, perCommit: [Int])>((0, 0, []))

    var counts: (inserted: Int, commits: Int) { state.withLockedValue { ($0.inserted, $0.perCommit.count) } }

    /// The rows each commit inserted, in order (commits that inserted none left out).
    var insertedPerCommit: [Int] { state.withLockedValue { $0.perCommit } }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        eventKind.tableName == "nimbus_records"
    }

    func databaseDidChange(with event: DatabaseEvent) {
        if event.kind == .insert { state.withLockedValue { $0.pending += 1 } }
    }

    func databaseDidCommit(_ db: GRDB.Database) {
        state.withLockedValue { state in
            if state.pending > 0 { state.perCommit.append(state.pending) }
            state.inserted += state.pending
            state.pending = 0
        }
    }

    func databaseDidRollback(_ db: GRDB.Database) {
        state.withLockedValue { $0.pending = 0 }
    }
}
