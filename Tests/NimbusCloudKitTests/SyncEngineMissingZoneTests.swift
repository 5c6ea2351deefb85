import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// New records a `CKSyncEngine` sends to a zone that does not exist create the zone, as
/// CloudKit's engine does: Apple's sync-engine sample never saves its zone before its first
/// send, and its tests delete the zone before each one and expect that send to succeed. A
/// record the server had (one with a change tag) still fails with `zoneNotFound`, for the app
/// to recover (the sample's `testSaveFailure_zoneNotFound`; and the two-device test).
@Suite("CKSyncEngine missing zones")
struct SyncEngineMissingZoneTests {
    @Test(arguments: Engine.available)
    func newRecordsSentToAMissingZoneCreateItAndKnownOnesStillFail(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let device = ContactsDevice()
            await device.start(database: database)

            // 444 new contacts, no zone: both requests (400 and 44) saved, nothing reported failed.
            for index in 0..<444 { await device.edit("c\(index)", name: "Contact \(index)", at: Date(timeIntervalSince1970: 10)) }
            try await device.syncEngine.sendChanges()
            #expect(await device.events.filter { $0.hasPrefix("sent") } == [
                "sentRecordZoneChanges(400 saved, 0 failed, 0 deleted)", "sentRecordZoneChanges(44 saved, 0 failed, 0 deleted)",
            ])
            #expect(await device.syncEngine.state.pendingRecordZoneChanges.isEmpty)
            #expect(try await database.recordZone(for: ContactsDevice.zoneID).zoneID == ContactsDevice.zoneID)
            #expect(try await database.record(for: ContactsDevice.recordID("c443"))["name"] as? String == "Contact 443")

            // The zone deleted again: an edit of a contact the server had fails with
            // zoneNotFound (the app re-adds the zone and the contact, and the next send saves them).
            _ = try await database.deleteRecordZone(withID: ContactsDevice.zoneID)
            await device.clearEvents()
            await device.edit("c1", name: "Renamed", at: Date(timeIntervalSince1970: 20))
            try await expectPartialFailure { try await device.syncEngine.sendChanges() }
            #expect(await device.events.filter { $0.hasPrefix("sent") } == ["sentRecordZoneChanges(0 saved, 1 failed, 0 deleted)"])
            try await device.syncEngine.sendChanges()
            #expect(try await database.record(for: ContactsDevice.recordID("c1"))["name"] as? String == "Renamed")

            // Not in the shared database, nor the default zone: those zones are not the app's to create.
            let other = ContactsDevice()
            await other.start(database: try await server.container(user: "bob").sharedCloudDatabase)
            await other.edit("c1", name: "Bob's", at: Date(timeIntervalSince1970: 30))
            try await expectPartialFailure { try await other.syncEngine.sendChanges() }
        }
    }
}
