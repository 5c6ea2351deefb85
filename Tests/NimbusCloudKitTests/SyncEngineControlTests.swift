import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// The app's controls over a `CKSyncEngine`, against a real server: untracked changes, batches
/// atomic by zone, the delegate's fetch options and cancelling.
@Suite("CKSyncEngine controls", .timeLimit(.minutes(10)))
struct SyncEngineControlTests {
    static let date = Date(timeIntervalSince1970: 100)

    /// With `hasPendingUntrackedChanges` set, a send asks the delegate for a batch though
    /// nothing is pending; without it, it does not. The flag is kept in the state.
    @Test(arguments: Engine.available)
    func untrackedChangesAreAskedForAndSent(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            _ = try await database.save(CKRecordZone(zoneID: ContactsDevice.zoneID))
            let device = ContactsDevice()
            await device.start(database: database)
            let syncEngine = await device.syncEngine
            await device.editUntracked("c1", name: "Untracked", at: Self.date)

            try await syncEngine.sendChanges()
            #expect(await device.batchRequests == 0)
            await #expect(throws: CKError.self) { _ = try await database.record(for: ContactsDevice.recordID("c1")) }

            syncEngine.state.hasPendingUntrackedChanges = true
            try await syncEngine.sendChanges()
            #expect(await device.batchRequests > 0)
            #expect(try await database.record(for: ContactsDevice.recordID("c1"))["name"] as? String == "Untracked")
            #expect(syncEngine.state.pendingRecordZoneChanges.isEmpty)

            let restarted = ContactsDevice()
            await restarted.start(database: database, state: try #require(await device.savedState))
            #expect(await restarted.syncEngine.state.hasPendingUntrackedChanges)

            syncEngine.state.hasPendingUntrackedChanges = false
            let asked = await device.batchRequests
            try await syncEngine.sendChanges()
            #expect(await device.batchRequests == asked)
        }
    }

    /// A batch atomic by zone: a conflict in one zone fails that zone's other changes
    /// (`batchRequestFailed`, still pending) and leaves the other zone's saved; the next send
    /// saves the zone whole. Not atomic, the conflict fails alone.
    @Test(arguments: Engine.available)
    func anAtomicByZoneBatchSavesEachZoneWholeOrNotAtAll(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let other = CKRecordZone.ID(zoneName: "Other")
            _ = try await database.modifyRecordZones(
                saving: [CKRecordZone(zoneID: ContactsDevice.zoneID), CKRecordZone(zoneID: other)], deleting: [])
            let existing = CKRecord(recordType: "Contact", recordID: ContactsDevice.recordID("c2"))
            existing["name"] = "The server's"
            _ = try await database.save(existing)

            let device = ContactsDevice()
            await device.start(database: database)
            await device.sendAtomicallyByZone(true)
            await device.edit("c1", name: "One", at: Self.date)
            await device.edit("c2", name: "Two", at: Self.date)
            await device.edit("Other/o1", name: "Elsewhere", at: Self.date)
            try await expectPartialFailure { try await device.syncEngine.sendChanges() }
            let failures = await device.events.filter { $0.hasPrefix("failed") }
            #expect(Set(failures) == ["failed c1 batchRequestFailed", "failed c2 serverRecordChanged"])
            await #expect(throws: CKError.self) { _ = try await database.record(for: ContactsDevice.recordID("c1")) }
            #expect(try await database.record(for: ContactsDevice.recordID("c2"))["name"] as? String == "The server's")
            #expect(try await database.record(for: ContactsDevice.recordID("Other/o1"))["name"] as? String == "Elsewhere")
            #expect(Set(await device.syncEngine.state.pendingRecordZoneChanges) == [
                .saveRecord(ContactsDevice.recordID("c1")), .saveRecord(ContactsDevice.recordID("c2")),
            ])

            try await device.syncEngine.sendChanges()
            #expect(try await database.record(for: ContactsDevice.recordID("c1"))["name"] as? String == "One")
            #expect(try await database.record(for: ContactsDevice.recordID("c2"))["name"] as? String == "Two")
            #expect(await device.syncEngine.state.pendingRecordZoneChanges.isEmpty)

            let loose = ContactsDevice()
            await loose.start(database: database)
            await loose.edit("c3", name: "Three", at: Self.date)
            await loose.edit("c2", name: "Stale", at: Self.date)
            try await expectPartialFailure { try await loose.syncEngine.sendChanges() }
            #expect(await loose.events.filter { $0.hasPrefix("failed") } == ["failed c2 serverRecordChanged"])
            #expect(try await database.record(for: ContactsDevice.recordID("c3"))["name"] as? String == "Three")
        }
    }

    /// The delegate's `nextFetchChangesOptions` decides what each fetch gets, the app's
    /// (`manual`) and the engine's own (`scheduled`): here, every zone but one.
    @Test(arguments: Engine.available)
    func theDelegatesFetchOptionsChooseWhatEachFetchGets(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let other = CKRecordZone.ID(zoneName: "Other")
            _ = try await database.modifyRecordZones(
                saving: [CKRecordZone(zoneID: ContactsDevice.zoneID), CKRecordZone(zoneID: other)], deleting: [])
            let here = CKRecord(recordType: "Contact", recordID: ContactsDevice.recordID("c1"))
            here["name"] = "Fetched"
            let there = CKRecord(recordType: "Contact", recordID: ContactsDevice.recordID("Other/o1"))
            there["name"] = "Left out"
            _ = try await database.modifyRecords(saving: [here, there], deleting: [])

            let device = ContactsDevice()
            await device.start(database: database)
            await device.excludeFromFetches([other])
            try await device.syncEngine.fetchChanges()
            #expect(await device.fetchReasons == [.manual])
            #expect(await device.contacts.mapValues(\.name) == ["c1": "Fetched"])
            #expect(await device.syncEngine.state.zoneIDsWithUnfetchedServerChanges.map(\.zoneName) == ["Other"])

            let automatic = ContactsDevice()
            await automatic.excludeFromFetches([other])
            await automatic.start(database: database, automatically: true)
            try await withTimeout(seconds: 120) { await automatic.until { $0.events.contains("didFetchChanges") } }
            #expect(await automatic.fetchReasons.first == .scheduled)
            #expect(await automatic.contacts.mapValues(\.name) == ["c1": "Fetched"])
            #expect(await automatic.syncEngine.state.zoneIDsWithUnfetchedServerChanges.map(\.zoneName) == ["Other"])
        }
    }

    /// `cancelOperations()` during a fetch and during a send: the awaiting call throws
    /// `operationCancelled`, nothing more is fetched or sent, what was pending stays pending,
    /// and the next fetch and send work.
    @Test(arguments: Engine.available)
    func cancellingStopsARunningFetchAndSend(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            _ = try await database.save(CKRecordZone(zoneID: ContactsDevice.zoneID))
            let record = CKRecord(recordType: "Contact", recordID: ContactsDevice.recordID("c1"))
            record["name"] = "On the server"
            _ = try await database.save(record)

            let device = ContactsDevice()
            await device.start(database: database)
            let syncEngine = await device.syncEngine
            await device.hold(at: "willFetchChanges")
            let fetch = Task { try await syncEngine.fetchChanges() }
            try await withTimeout { await device.until { $0.events.contains("holding willFetchChanges") } }
            await syncEngine.cancelOperations()
            await device.release()
            await Self.expectCancelled(fetch)
            #expect(await device.contacts.isEmpty)
            #expect(!(await device.events.contains { $0.hasPrefix("fetchedDatabaseChanges") }))
            try await syncEngine.fetchChanges()
            #expect(await device.contacts["c1"]?.name == "On the server")

            await device.edit("c2", name: "Not sent", at: Self.date)
            await device.hold(at: "willSendChanges")
            let send = Task { try await syncEngine.sendChanges() }
            try await withTimeout { await device.until { $0.events.contains("holding willSendChanges") } }
            await syncEngine.cancelOperations()
            await device.release()
            await Self.expectCancelled(send)
            #expect(syncEngine.state.pendingRecordZoneChanges == [.saveRecord(ContactsDevice.recordID("c2"))])
            #expect(!(await device.events.contains { $0.hasPrefix("sentRecordZoneChanges") }))
            await #expect(throws: CKError.self) { _ = try await database.record(for: ContactsDevice.recordID("c2")) }
            try await syncEngine.sendChanges()
            #expect(try await database.record(for: ContactsDevice.recordID("c2"))["name"] as? String == "Not sent")
        }
    }

    /// A fetch or send the engine's `cancelOperations()` stopped: it threw `operationCancelled`.
    static func expectCancelled(_ task: Task<Void, any Error>, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            try await task.value
            Issue.record("not cancelled", sourceLocation: sourceLocation)
        } catch {
            #expect((error as? CKError)?.code == .operationCancelled, "\(error)", sourceLocation: sourceLocation)
        }
    }
}
