import Foundation
import GRDB
// `@testable import NimbusSQLite` needs the SQLite C module the engine imports.
import GRDBSQLite
import NimbusProtocol
import NimbusServer
@testable import NimbusSQLite
@testable import NimbusStore
import NimbusTestSupport
import Testing

/// The per-user notification collection: written with the change, fetched since a token,
/// marked read.
@Suite("Notification collection")
struct NotificationCollectionTests {
    @Test(arguments: Engine.available) func theCollectionPagesSinceATokenWithMoreComing(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.subscribe(zoneSubscription("z", zone: "Z"))
            let empty = try await alice.notificationChanges()
            #expect(empty["notifications"] == [])
            #expect(empty["moreComing"] == false)
            for index in 0..<5 { _ = try await alice.modify("Z", [op("create", "r\(index)")]) }

            var token = empty["syncToken"]?.string
            var ids: [String] = []
            var pages: [Bool] = []
            repeat {
                let page = try await alice.notificationChanges(since: token, limit: 2)
                ids += page["notifications"]?.array?.compactMap { $0["notificationID"]?.string } ?? []
                pages.append(page["moreComing"] == true)
                token = page["syncToken"]?.string
            } while pages.last == true
            #expect(pages == [true, true, false])
            #expect(ids.count == 5 && Set(ids).count == 5)
            #expect(try await alice.notificationChanges(since: token)["notifications"] == [])

            let entry = try #require(try await alice.allNotifications().first)
            #expect(entry["notificationType"] == "recordZone")
            #expect(entry["subscriptionID"] == "z")
            #expect(entry["databaseScope"] == "private")
            #expect(entry["zoneID"]?["zoneName"] == "Z")
            #expect(entry["isRead"] == false)
            #expect(entry["payload"]?["ck"]?["nid"] == entry["notificationID"])

            let bad = try await alice.notificationChanges(since: "not-a-token")
            #expect(bad.serverErrorCode == "BAD_REQUEST")
        }
    }

    @Test(arguments: Engine.available) func aReadMarkReachesTheUsersOtherDevices(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.subscribe(zoneSubscription("z", zone: "Z"))
            _ = try await alice.modify("Z", [op("create", "one")])
            _ = try await alice.modify("Z", [op("create", "two")])
            let tablet = alice.onDevice("tablet")
            let phone = alice.onDevice("phone")

            let seen = try await tablet.notificationChanges()
            let ids = try #require(seen["notifications"]?.array?.compactMap { $0["notificationID"]?.string })
            #expect(ids.count == 2)

            let marked = try await phone.markRead([ids[0], "unknown"])
            #expect(marked["notifications"]?.array?.first == ["notificationID": .string(ids[0]), "isRead": true])
            #expect(marked["notifications"]?.array?.last?["serverErrorCode"] == "NOT_FOUND")

            // The tablet sees exactly the mark since its token.
            let update = try await tablet.notificationChanges(since: seen["syncToken"]?.string)
            let entries = try #require(update["notifications"]?.array)
            #expect(entries.count == 1)
            #expect(entries.first?["notificationID"]?.string == ids[0])
            #expect(entries.first?["isRead"] == true)
            // Marking again changes nothing.
            _ = try await phone.markRead([ids[0]])
            #expect(try await tablet.notificationChanges(since: update["syncToken"]?.string)["notifications"] == [])

            // Nobody else can mark Alice's notifications.
            let bob = try await server.user("bob")
            #expect(try await bob.markRead([ids[1]])["notifications"]?.array?.first?["serverErrorCode"] == "NOT_FOUND")
        }
    }

    @Test func notificationsAreWrittenInTheTransactionOfTheChange() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(directory: directory)
        defer { try? store.close() }
        let database = DatabaseKey(container: "iCloud.t", environment: .development, scope: .private, owner: "_alice")
        let caller = Caller(userRecordName: "_alice", deviceID: "phone")
        let policy = WritePolicy(creatorOnlyWrites: false, now: 1_000)
        _ = try await store.modifyZones([.create(zoneName: "Z")], caller: caller, in: database)
        let subscription = SubscriptionDefinition(subscriptionID: "z", kind: .zone(zoneName: "Z", recordType: nil))
        _ = try await store.modifySubscriptions([.save(subscription)], owner: "_alice", in: database)
        let recipient = NotificationRecipient(container: "iCloud.t", environment: .development, userRecordName: "_alice")

        // The commit returns its notifications, and they are already in the collection.
        let outcome = try await store.modifyRecords(
            [RecordOperation(type: .create, record: Record(recordName: "r", recordType: "T"))], zone: "Z", atomic: true,
            policy: policy, caller: caller, in: database)
        let notifications = try #require(outcome.commit?.notifications)
        #expect(notifications.count == 1)
        #expect(notifications.first?.originDevice == "phone")
        let collection = try await store.notificationChanges(for: recipient, since: nil, limit: 10)
        #expect(collection.notifications.map(\.notificationID) == notifications.map(\.notificationID))

        // An atomic request that fails writes nothing, so it notifies nothing.
        let failed = try await store.modifyRecords(
            [
                RecordOperation(type: .create, record: Record(recordName: "s", recordType: "T")),
                RecordOperation(type: .create, record: Record(recordName: "r", recordType: "T")),
            ], zone: "Z", atomic: true, policy: policy, caller: caller, in: database)
        #expect(failed.commit == nil)
        #expect(try await store.notificationChanges(for: recipient, since: nil, limit: 10).notifications.count == 1)

        // When recording the notification fails, the change is not committed either. (A
        // stored subscription that does not decode is skipped, not a failure: it must not
        // block every write of its database, so the failure is made in the collection.)
        try await store.pool.write { db in
            try db.execute(
                sql: "CREATE TRIGGER refuse BEFORE INSERT ON notifications BEGIN SELECT RAISE(ABORT, 'refused'); END")
        }
        await #expect(throws: (any Error).self) {
            _ = try await store.modifyRecords(
                [RecordOperation(type: .create, record: Record(recordName: "t", recordType: "T"))], zone: "Z", atomic: true,
                policy: policy, caller: caller, in: database)
        }
        #expect(try await store.lookupRecords(["t"], zone: "Z", in: database) == [nil])
    }

    @Test func compactionRemovesOldNotificationsAndExpiresTheirTokens() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(directory: directory)
        defer { try? store.close() }
        let database = DatabaseKey(container: "iCloud.t", environment: .development, scope: .private, owner: "_alice")
        let caller = Caller(userRecordName: "_alice", deviceID: "phone")
        let recipient = NotificationRecipient(container: "iCloud.t", environment: .development, userRecordName: "_alice")
        _ = try await store.modifySubscriptions(
            [.save(SubscriptionDefinition(subscriptionID: "d", kind: .database))], owner: "_alice", in: database)
        func write(_ name: String, at now: Int64) async throws {
            _ = try await store.modifyRecords(
                [RecordOperation(type: .create, record: Record(recordName: name, recordType: "T"))], zone: "_defaultZone",
                atomic: false, policy: WritePolicy(creatorOnlyWrites: false, now: now), caller: caller, in: database)
        }
        try await write("old", at: 1_000)
        let early = try await store.notificationChanges(for: recipient, since: nil, limit: 10).syncToken
        try await write("new", at: 9_000)

        #expect(try await store.compactNotifications(retentionMillis: 5_000, now: 10_000) == 1)
        let remaining = try await store.notificationChanges(for: recipient, since: nil, limit: 10)
        #expect(remaining.notifications.count == 1)
        // A token from before the compacted notification can no longer be trusted.
        await #expect(throws: CloudKitError.self) {
            _ = try await store.notificationChanges(for: recipient, since: store.changeTokens.notifications(sequence: 0, for: recipient), limit: 10)
        }
        // One taken after it still reads what came since.
        #expect(try await store.notificationChanges(for: recipient, since: early, limit: 10).notifications.count == 1)
    }
}
