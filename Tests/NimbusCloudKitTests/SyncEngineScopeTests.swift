import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// `sendChanges(_:)` and `fetchChanges(_:)` with their options' scopes: only the changes in
/// scope go, only the zones in scope are fetched, and the rest stays pending or unfetched.
@Suite("CKSyncEngine scopes")
struct SyncEngineScopeTests {
    @Test(arguments: Engine.available)
    func aScopedSendSendsOnlyItsRecordsAndAScopedFetchOnlyItsZones(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let connection = try await server.connection(user: "ada")
            var second = connection
            second.deviceID = "device-b"
            let a = ContactsDevice()
            await a.start(database: CKContainer(identifier: CloudKitServer.containerID, connection: connection).privateCloudDatabase)
            await a.createZone()
            await a.edit("c1", name: "Grace", at: Date(timeIntervalSince1970: 1))
            await a.edit("c2", name: "Ada", at: Date(timeIntervalSince1970: 1))

            let c1 = ContactsDevice.recordID("c1")
            try await a.syncEngine.sendChanges(CKSyncEngine.SendChangesOptions(scope: .recordIDs([c1])))
            #expect(await a.syncEngine.state.pendingRecordZoneChanges == [.saveRecord(ContactsDevice.recordID("c2"))])
            #expect(await a.syncEngine.state.pendingDatabaseChanges.isEmpty, "the zone of a record in scope is saved with it")
            try await a.syncEngine.sendChanges(CKSyncEngine.SendChangesOptions(scope: .allExcluding([ContactsDevice.zoneID])))
            #expect(await a.syncEngine.state.pendingRecordZoneChanges.count == 1)
            try await a.syncEngine.sendChanges()
            #expect(await a.syncEngine.state.pendingRecordZoneChanges.isEmpty)

            let b = ContactsDevice()
            await b.start(database: CKContainer(identifier: CloudKitServer.containerID, connection: second).privateCloudDatabase)
            try await b.syncEngine.fetchChanges(CKSyncEngine.FetchChangesOptions(scope: .allExcluding([ContactsDevice.zoneID])))
            #expect(await b.contacts.isEmpty)
            #expect(await b.syncEngine.state.zoneIDsWithUnfetchedServerChanges.map(\.zoneName) == ["Contacts"])
            try await b.syncEngine.fetchChanges(CKSyncEngine.FetchChangesOptions(scope: .zoneIDs([ContactsDevice.zoneID])))
            #expect(await b.contacts.mapValues(\.name) == ["c1": "Grace", "c2": "Ada"])
            #expect(await b.syncEngine.state.zoneIDsWithUnfetchedServerChanges.isEmpty)
        }
    }
}
