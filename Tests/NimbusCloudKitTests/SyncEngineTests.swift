import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// CKSyncEngine against a real server: events in CloudKit's order, the sync-engine sample's
/// two devices (batches past the server's limit, conflicts, zoneNotFound and unknownItem
/// recovery), account changes and push-driven automatic sync.
@Suite("CKSyncEngine", .timeLimit(.minutes(10)))
struct SyncEngineTests {
    @Test func aFetchAndASendReportTheirEventsInCloudKitsOrder() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let device = ContactsDevice()
            await device.start(database: database)
            await device.createZone()
            await device.edit("c1", name: "Grace", at: Date(timeIntervalSince1970: 100))
            try await device.syncEngine.sendChanges()
            #expect(await device.events == [
                "accountChange(signIn)", "stateUpdate", "willSendChanges",
                "sentDatabaseChanges(1 saved, 0 failed)", "stateUpdate",
                "sentRecordZoneChanges(1 saved, 0 failed, 0 deleted)", "stateUpdate", "didSendChanges",
            ])
            #expect(await device.syncEngine.state.pendingRecordZoneChanges.isEmpty)
            #expect(await device.syncEngine.state.pendingDatabaseChanges.isEmpty)

            let other = ContactsDevice()
            await other.start(database: database)
            try await other.syncEngine.fetchChanges()
            #expect(await other.events == [
                "accountChange(signIn)", "stateUpdate", "willFetchChanges",
                "fetchedDatabaseChanges(1 modified, 0 deleted)", "stateUpdate",
                "willFetchRecordZoneChanges(Contacts)", "fetchedRecordZoneChanges(1 modified, 0 deleted)", "stateUpdate",
                "didFetchRecordZoneChanges(Contacts)", "didFetchChanges",
            ])
            #expect(await other.contacts["c1"]?.name == "Grace")
        }
    }

    @Test(arguments: Engine.available)
    func theSampleSyncsTwoDevicesThroughConflictsLostZonesAndLostRecords(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let connection = try await server.connection(user: "ada")
            var second = connection
            second.deviceID = "device-b"
            let databaseA = CKContainer(identifier: CloudKitServer.containerID, connection: connection).privateCloudDatabase
            let databaseB = CKContainer(identifier: CloudKitServer.containerID, connection: second).privateCloudDatabase
            let a = ContactsDevice()
            let b = ContactsDevice()
            await a.start(database: databaseA)
            await b.start(database: databaseB)

            // More than 400 pending records in one send: the engine sends them in batches of
            // 400 (CloudKit's limit per operation, the server's per request), without the app
            // seeing it.
            await a.createZone()
            for index in 0..<450 { await a.edit("c\(index)", name: "Contact \(index)", at: Date(timeIntervalSince1970: 10)) }
            try await a.syncEngine.sendChanges()
            #expect(await a.syncEngine.state.pendingRecordZoneChanges.isEmpty)
            let sent = await a.events.filter { $0.hasPrefix("sentRecordZoneChanges") }
            #expect(sent.count >= 2)
            #expect(!sent.contains { $0.contains(" 0 saved") })
            try await b.syncEngine.fetchChanges()
            #expect(await b.contacts.count == 450)

            // Both edit c1; the newer edit (B's) wins on both devices.
            await a.edit("c1", name: "A's edit", at: Date(timeIntervalSince1970: 100))
            await b.edit("c1", name: "B's edit", at: Date(timeIntervalSince1970: 200))
            try await a.syncEngine.sendChanges()
            try await expectPartialFailure { try await b.syncEngine.sendChanges() }   // conflict: B is newer, re-queued
            try await b.syncEngine.sendChanges()
            try await a.syncEngine.fetchChanges()
            #expect(await a.contacts["c1"]?.name == "B's edit")
            // Both edit c2; the newer edit (A's) wins.
            await a.edit("c2", name: "A newer", at: Date(timeIntervalSince1970: 300))
            await b.edit("c2", name: "B older", at: Date(timeIntervalSince1970: 250))
            try await a.syncEngine.sendChanges()
            try await expectPartialFailure { try await b.syncEngine.sendChanges() }   // conflict: the server is newer, B takes it
            #expect(await b.contacts["c2"]?.name == "A newer")
            let stillPending = await b.syncEngine.state.pendingRecordZoneChanges
            let lastEvents = await b.events.suffix(30).filter { !$0.hasPrefix("stateUpdate") }
            #expect(stillPending.isEmpty, "\(stillPending) \(lastEvents)")

            // A record deleted behind B's back: B's edit fails with unknownItem and is saved anew.
            _ = try await databaseA.deleteRecord(withID: ContactsDevice.recordID("c3"))
            await b.edit("c3", name: "Still here", at: Date(timeIntervalSince1970: 400))
            try await expectPartialFailure { try await b.syncEngine.sendChanges() }
            try await b.syncEngine.sendChanges()
            #expect(try await databaseA.record(for: ContactsDevice.recordID("c3"))["name"] as? String == "Still here")

            // The zone deleted behind B's back: zoneNotFound, the zone is recreated, the edit saved.
            _ = try await databaseA.deleteRecordZone(withID: ContactsDevice.zoneID)
            await b.edit("c4", name: "Rescued", at: Date(timeIntervalSince1970: 500))
            try await expectPartialFailure { try await b.syncEngine.sendChanges() }
            try await b.syncEngine.sendChanges()
            #expect(try await databaseA.record(for: ContactsDevice.recordID("c4"))["name"] as? String == "Rescued")
            #expect(await b.syncEngine.state.pendingRecordZoneChanges.isEmpty)
        }
    }

    @Test func theStateSurvivesARestartAndAnotherUserIsAnAccountSwitch() async throws {
        try await CloudKitServer.with { server in
            let ada = try await server.container(user: "ada")
            let device = await Self.deviceWithGrace(ada.privateCloudDatabase)
            try await device.syncEngine.fetchChanges()
            let state = try #require(await device.savedState)

            // A restart with the saved state: nothing new to fetch, the edit still pending.
            let restarted = ContactsDevice()
            await restarted.start(database: ada.privateCloudDatabase, state: state)
            #expect(await restarted.syncEngine.state.pendingRecordZoneChanges == [.saveRecord(ContactsDevice.recordID("c1"))])
            try await restarted.syncEngine.fetchChanges()
            #expect(!(await restarted.events.contains("accountChange(signIn)")))

            // The same state with another user signed in.
            let bob = try await server.container(user: "bob")
            let switched = ContactsDevice()
            await switched.start(database: bob.privateCloudDatabase, state: state)
            try await switched.syncEngine.fetchChanges()
            #expect(await switched.events.first == "accountChange(switchAccounts)")
            #expect(await switched.syncEngine.state.pendingRecordZoneChanges.isEmpty)
        }
    }

    /// A device on `database` with the Contacts zone and one contact queued, not yet sent.
    static func deviceWithGrace(_ database: CKDatabase) async -> ContactsDevice {
        let device = ContactsDevice()
        await device.start(database: database)
        await device.createZone()
        await device.edit("c1", name: "Grace", at: Date(timeIntervalSince1970: 1))
        return device
    }

    /// A zone deleted on another device reaches the engine as a deletion with reason
    /// `deleted` (the app drops its data; the engine forgets the zone's token).
    @Test func aZoneDeletedElsewhereIsADeletionEventWithReasonDeleted() async throws {
        try await CloudKitServer.with { server in
            let ada = try await server.container(user: "ada")
            let device = await Self.deviceWithGrace(ada.privateCloudDatabase)
            try await device.syncEngine.sendChanges()
            try await device.syncEngine.fetchChanges()
            _ = try await ada.privateCloudDatabase.deleteRecordZone(withID: ContactsDevice.zoneID)
            await device.clearEvents()
            try await device.syncEngine.fetchChanges()
            #expect(await device.zoneDeletions == ["Contacts deleted"])
            #expect(await device.events.contains("fetchedDatabaseChanges(0 modified, 1 deleted)"))
            #expect(await device.contacts.isEmpty)
            #expect(await device.syncEngine.state.zoneIDsWithUnfetchedServerChanges.isEmpty)
        }
    }

    /// The state of a user who has since signed out: the next fetch reports the sign-out
    /// first, and the engine starts over from an empty state.
    @Test func aSignedOutUserIsASignOutEvent() async throws {
        try await CloudKitServer.with { server in
            let device = ContactsDevice()
            await device.start(database: try await server.container(user: "ada").privateCloudDatabase)
            await device.createZone()
            try await device.syncEngine.fetchChanges()
            let state = try #require(await device.savedState)

            let signedOut = ContactsDevice()
            await signedOut.start(database: try await server.container(user: nil).privateCloudDatabase, state: state)
            #expect(await signedOut.syncEngine.state.pendingDatabaseChanges.count == 1)
            try? await signedOut.syncEngine.fetchChanges()
            #expect(await signedOut.events.first == "accountChange(signOut)")
            #expect(await signedOut.syncEngine.state.pendingDatabaseChanges.isEmpty)
        }
    }

    @Test(arguments: Engine.available)
    func automaticSyncSendsPendingChangesAndFetchesOnPush(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let connection = try await server.connection(user: "ada")
            var second = connection
            second.deviceID = "device-b"
            let containerA = CKContainer(identifier: CloudKitServer.containerID, connection: connection)
            let containerB = CKContainer(identifier: CloudKitServer.containerID, connection: second)
            let a = ContactsDevice()
            let b = ContactsDevice()
            await b.start(database: containerB.privateCloudDatabase, automatically: true)
            try await server.waitForPushDevices(1, of: containerB)
            try await withTimeout(seconds: 120) { await b.until { $0.events.contains("didFetchChanges") } }

            await a.start(database: containerA.privateCloudDatabase, automatically: true)
            await a.createZone()
            await a.edit("c1", name: "Pushed", at: Date(timeIntervalSince1970: 1))
            // A's send is done when its engine has no pending change left (it says so with a
            // state update after the server answered); B has the record after the push.
            try await withTimeout(seconds: 120) {
                await a.until { $0.syncEngine.state.pendingRecordZoneChanges.isEmpty && $0.events.contains("didSendChanges") }
            }
            try await withTimeout(seconds: 120) { await b.until { $0.contacts["c1"]?.name == "Pushed" } }
            #expect(await a.syncEngine.state.pendingDatabaseChanges.isEmpty)
        }
    }
}

extension SyncEngineTests {
    /// The network drops while the app runs: the push channel closes, a change is saved
    /// meanwhile, the network comes back. The engine fetches when the channel connects
    /// again, without any call from the app.
    ///
    /// The change is saved by the app's extension on the same device (the same device ID),
    /// so the server neither pushes it to this device nor sends it in the catch-up push on
    /// reconnection: only the engine's fetch on connecting brings it.
    @Test(arguments: Engine.available)
    func automaticSyncFetchesWhenThePushChannelConnectsAgain(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            try await TCPProxy.with(to: server.port) { proxy in
                let direct = try await server.connection(user: "ada")
                var throughProxy = direct
                throughProxy.serverURL = URL(string: "http://127.0.0.1:\(proxy.port)")!
                let app = CKContainer(identifier: CloudKitServer.containerID, connection: throughProxy)
                let appExtension = CKContainer(identifier: CloudKitServer.containerID, connection: direct)
                _ = try await appExtension.privateCloudDatabase.save(CKRecordZone(zoneID: ContactsDevice.zoneID))

                let device = ContactsDevice()
                await device.start(database: app.privateCloudDatabase, automatically: true)
                try await server.waitForPushDevices(1, of: appExtension)
                try await withTimeout(seconds: 120) { await device.until { $0.events.contains("didFetchChanges") } }

                proxy.cut()
                try await server.waitForPushDevices(0, of: appExtension)
                let record = CKRecord(recordType: "Contact", recordID: ContactsDevice.recordID("c1"))
                record["name"] = "Saved while offline"
                record["modified"] = Date(timeIntervalSince1970: 1)
                _ = try await appExtension.privateCloudDatabase.save(record)
                #expect(await device.contacts["c1"] == nil)
                proxy.restore()

                try await withTimeout(seconds: 120) { await device.until { $0.contacts["c1"]?.name == "Saved while offline" } }
                try await server.waitForPushDevices(1, of: appExtension)
            }
        }
    }
}

/// CKSyncEngine's refusals.
@Suite("CKSyncEngine refusals")
struct SyncEngineRefusalTests {
    @Test func thePublicDatabaseIsRefusedAsBadDatabase() async throws {
        try await CloudKitServer.with { server in
            let device = ContactsDevice()
            await device.start(database: try await server.container(user: "ada").publicCloudDatabase)
            do {
                try await device.syncEngine.fetchChanges()
                Issue.record("a sync engine fetched the public database")
            } catch CKError.badDatabase {
            }
            #expect(await device.events.isEmpty)
        }
    }
}

/// Runs a manual send that must fail as CloudKit's does when some changes failed: a
/// `partialFailure`, thrown after the events that report each failure.
func expectPartialFailure(
    sourceLocation: SourceLocation = #_sourceLocation, _ send: () async throws -> Void
) async throws {
    do {
        try await send()
        Issue.record("the send succeeded", sourceLocation: sourceLocation)
    } catch let error as CKError where error.code == .partialFailure {
        #expect(error.partialErrorsByItemID?.isEmpty == false, sourceLocation: sourceLocation)
    }
}
