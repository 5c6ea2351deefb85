import Foundation
import NimbusCloudKit
import Testing

/// Subscriptions saved, fetched and deleted; their pushes read as CloudKit notifications.
@Suite("Subscriptions and notifications")
struct SubscriptionTests {
    @Test func subscriptionsOfEachKindRoundTripThroughTheServer() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let zone = CKRecordZone(zoneName: "Notes")
            _ = try await database.save(zone)

            let query = CKQuerySubscription(
                recordType: "Note", predicate: NSPredicate(format: "done == %d", 0), subscriptionID: "open",
                options: [.firesOnRecordCreation, .firesOnRecordUpdate])
            query.zoneID = zone.zoneID
            let info = CKSubscription.NotificationInfo()
            info.shouldSendContentAvailable = true
            info.desiredKeys = ["title"]
            query.notificationInfo = info
            let zoneSubscription = CKRecordZoneSubscription(zoneID: zone.zoneID, subscriptionID: "notes-zone")
            let everything = CKDatabaseSubscription(subscriptionID: "all")
            let (saved, _) = try await database.modifySubscriptions(saving: [query, zoneSubscription, everything], deleting: [])
            #expect(saved.count == 3)
            #expect(saved.values.allSatisfy { (try? $0.get()) != nil })

            let fetched = try #require(try await database.subscription(for: "open") as? CKQuerySubscription)
            #expect(fetched.recordType == "Note")
            #expect(fetched.querySubscriptionOptions == [.firesOnRecordCreation, .firesOnRecordUpdate])
            #expect(fetched.zoneID == zone.zoneID)
            #expect(fetched.notificationInfo?.desiredKeys == ["title"])
            #expect(fetched.predicate.description.contains("done"))
            let all = try await database.allSubscriptions()
            #expect(Set(all.map(\.subscriptionID)) == ["open", "notes-zone", "all"])
            #expect(all.first { $0.subscriptionID == "notes-zone" }?.subscriptionType == .recordZone)

            #expect(try await database.deleteSubscription(withID: "all") == "all")
            do {
                _ = try await database.subscription(for: "all")
                Issue.record("a deleted subscription was fetched")
            } catch CKError.unknownItem {
            }
        }
    }

    @Test func aPushPayloadBecomesTheNotificationSubclassOfItsSubscription() throws {
        let zonePush: [AnyHashable: Any] = [
            "aps": ["content-available": 1],
            "ck": ["nid": "n-1", "cid": "iCloud.com.example.notes", "fet": ["zid": "Notes", "dbs": 2, "sid": "notes-zone"]],
        ]
        let zone = try #require(CKNotification(fromRemoteNotificationDictionary: zonePush) as? CKRecordZoneNotification)
        #expect(zone.notificationType == .recordZone)
        #expect(zone.recordZoneID?.zoneName == "Notes")
        #expect(zone.databaseScope == .private)
        #expect(zone.subscriptionID == "notes-zone")
        #expect(zone.containerIdentifier == "iCloud.com.example.notes")

        let queryPush: [AnyHashable: Any] = [
            "aps": ["alert": ["title": "New note", "body": "Groceries"]],
            "ck": ["nid": "n-2", "qry": ["rid": "n1", "zid": "Notes", "dbs": 2, "fo": 1, "sid": "open",
                                        "af": ["title": ["value": "Groceries", "type": "STRING"]]]],
        ]
        let query = try #require(CKQueryNotification(fromRemoteNotificationDictionary: queryPush))
        #expect(query.queryNotificationReason == .recordCreated)
        #expect(query.recordID?.recordName == "n1")
        #expect(query.recordFields?["title"] as? String == "Groceries")
        #expect(query.title == "New note")
        #expect(query.alertBody == "Groceries")

        #expect(CKNotification(fromRemoteNotificationDictionary: ["aps": ["badge": 1]]) == nil)
    }

    @Test func theWebSocketChannelDeliversAZoneNotification() async throws {
        try await CloudKitServer.with { server in
            let connection = try await server.connection(user: "ada")
            var otherDevice = connection
            otherDevice.deviceID = "other-device"
            let listener = CKContainer(identifier: CloudKitServer.containerID, connection: connection)
            let writer = CKContainer(identifier: CloudKitServer.containerID, connection: otherDevice)
            let zone = CKRecordZone(zoneName: "Notes")
            _ = try await writer.privateCloudDatabase.save(zone)
            let subscription = CKRecordZoneSubscription(zoneID: zone.zoneID, subscriptionID: "notes-zone")
            let info = CKSubscription.NotificationInfo()
            info.shouldSendContentAvailable = true
            subscription.notificationInfo = info
            _ = try await writer.privateCloudDatabase.save(subscription)

            let received = Task {
                for await notification in listener.remoteNotifications() {
                    if let zone = notification as? CKRecordZoneNotification { return zone.recordZoneID?.zoneName }
                }
                return nil as String?
            }
            try await server.waitForPushDevices(1, of: listener)
            _ = try await writer.privateCloudDatabase.save(
                CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "n1", zoneID: zone.zoneID)))
            let zoneName = try await withTimeout { await received.value }
            #expect(zoneName == "Notes")
            received.cancel()
        }
    }
}
