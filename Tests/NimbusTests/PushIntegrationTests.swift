import Foundation
import Nimbus
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Subscriptions, the push channel and the notification collection against a real server.
@Suite("Push against a real server")
struct PushIntegrationTests {
    let readingList = ZoneID(zoneName: "ReadingList")

    /// Ana's phone and another device of hers (`other`), with the reading list zone and a
    /// subscription to it saved from the phone.
    func anaWithReadingList(_ server: LiveServer, other: String) async throws -> (phone: Container, other: Container) {
        let phone = try await server.container(user: "ana", device: "phone")
        let second = try await server.container(user: "ana", device: other)
        try await phone.privateCloudDatabase.save(RecordZone(zoneID: readingList))
        try await phone.privateCloudDatabase.save(Subscription(id: "reading-list", kind: .recordZone(readingList)))
        return (phone, second)
    }

    @Test func subscriptionsSaveListLookUpAndDelete() async throws {
        try await LiveServer.with { server in
            let database = try await server.container(user: "ana").privateCloudDatabase
            try await database.save(RecordZone(zoneID: readingList))
            let query = Query(recordType: "Bookmark", filters: [.equals("read", false)])
            let subscriptions = [
                Subscription(id: "zone", kind: .recordZone(readingList)),
                Subscription(id: "typed", kind: .recordZone(readingList, recordType: "Bookmark")),
                Subscription(
                    id: "unread", kind: .query(query, zoneID: readingList, firesOn: [.create, .update], firesOnce: false),
                    notificationInfo: Subscription.NotificationInfo(
                        alertBody: "New unread bookmark", shouldSendContentAvailable: true, desiredKeys: ["title"])),
                Subscription(id: "everything", kind: .database),
            ]
            let results = try await database.modifySubscriptions(saving: subscriptions, deleting: [])
            for subscription in subscriptions {
                let saved = try #require(try results.saveResults[subscription.id]?.get())
                #expect(saved.id == subscription.id)
                #expect(saved.notificationInfo == subscription.notificationInfo)
            }

            let listed = try await database.allSubscriptions()
            #expect(Set(listed.map(\.id)) == ["zone", "typed", "unread", "everything"])
            let unread = try await database.subscription(for: "unread")
            guard case .query(let savedQuery, let zone, let firesOn, false) = unread.kind else {
                Issue.record("expected a query subscription, got \(unread.kind)")
                return
            }
            #expect(savedQuery == query)
            #expect(zone?.zoneName == "ReadingList")
            #expect(firesOn == [.create, .update])

            try await database.deleteSubscription(withID: "zone")
            let gone = try await #require(throws: NimbusError.self) { try await database.subscription(for: "zone") }
            #expect(gone.code == .unknownItem)
        }
    }

    @Test func aChangeIsPushedToTheUsersOtherDeviceAndNotBackToItsOrigin() async throws {
        try await LiveServer.with { server in
            let (phone, laptop) = try await anaWithReadingList(server, other: "laptop")

            let phonePushes = PushRecorder(PushClient(container: phone))
            let laptopPushes = PushRecorder(PushClient(container: laptop))
            defer {
                phonePushes.stop()
                laptopPushes.stop()
            }
            try await phonePushes.wait(for: 1, "connected")
            try await laptopPushes.wait(for: 1, "connected")

            // The laptop bookmarks an article: the phone is told.
            var bookmark = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "a1", zoneID: readingList))
            bookmark["title"] = "Swift on the server"
            try await laptop.privateCloudDatabase.save(bookmark)
            try await phonePushes.wait(for: 1, "push")
            let push = try #require(phonePushes.notifications.first)
            #expect(push.kind == .recordZone)
            #expect(push.isContentAvailable)
            #expect(push.containerIdentifier == LiveServer.containerID)
            #expect(push.subscriptionID == "reading-list")
            #expect(push.databaseScope == .private)
            #expect(push.recordZoneID?.zoneName == "ReadingList")
            #expect(push.subscriptionOwnerUserRecordName == (try await phone.userRecordID().recordName))

            // The phone un-bookmarks it: the laptop's first push is about that, not its own save.
            try await phone.privateCloudDatabase.deleteRecord(withID: bookmark.id)
            try await laptopPushes.wait(for: 1, "push")
            let laptopFirst = try #require(laptopPushes.notifications.first)
            #expect(laptopFirst.notificationID != push.notificationID)

            // Both notifications are in the collection, in order.
            let collection = try await phone.notificationChanges(since: nil)
            #expect(collection.notifications.map(\.notificationID) == [push.notificationID, laptopFirst.notificationID])
        }
    }

    @Test func theNotificationCollectionCarriesWhatAnOfflineDeviceMissedAndReadMarks() async throws {
        try await LiveServer.with { server in
            let (phone, tablet) = try await anaWithReadingList(server, other: "tablet")
            let database = phone.privateCloudDatabase
            let start = try await tablet.notificationChanges(since: nil)
            #expect(start.notifications.isEmpty)

            for index in 1...3 {
                var record = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b\(index)", zoneID: readingList))
                record["title"] = "Article \(index)"
                try await database.save(record)
            }
            let missed = try await tablet.notificationChanges(since: start.changeToken)
            #expect(missed.notifications.count == 3)
            #expect(missed.notifications.allSatisfy { $0.kind == .recordZone && $0.subscriptionID == "reading-list" && !$0.isRead })
            #expect(missed.notifications.allSatisfy { $0.creationDate != nil })

            let ids = missed.notifications.compactMap(\.notificationID)
            let marks = try await tablet.markNotificationsRead(Array(ids.prefix(2)) + ["no-such-notification"])
            #expect(marks.values.filter { (try? $0.get()) != nil }.count == 2)
            #expect(marks["no-such-notification"].flatMap { try? $0.failureValue } != nil)

            let afterMarks = try await phone.notificationChanges(since: missed.changeToken)
            #expect(Set(afterMarks.notifications.filter(\.isRead).compactMap(\.notificationID)) == Set(ids.prefix(2)))
        }
    }

    @Test func aDeviceThatWasOfflineGetsOneCoalescedPushWhenItConnects() async throws {
        try await LiveServer.with { server in
            let (phone, tablet) = try await anaWithReadingList(server, other: "tablet")

            // The tablet is online once, so the server knows it, then goes away.
            let once = PushRecorder(PushClient(container: tablet))
            try await once.wait(for: 1, "connected")
            once.stop()
            try await once.waitUntilFinished()
            try await server.waitForPushDevices(0, of: tablet)

            for index in 1...3 {
                var record = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "b\(index)", zoneID: readingList))
                record["title"] = "Article \(index)"
                try await phone.privateCloudDatabase.save(record)
            }

            let back = PushRecorder(PushClient(container: tablet))
            defer { back.stop() }
            try await back.wait(for: 1, "push")
            let catchUp = try #require(back.notifications.first)
            #expect(catchUp.coalescedCount == 3)
            #expect(catchUp.recordZoneID?.zoneName == "ReadingList")
        }
    }

    @Test func refusedCredentialsEndThePushChannel() async throws {
        try await LiveServer.with { server in
            let signedOut = server.anonymousContainer().with(credentials: .apiToken(server.apiToken, webAuthToken: "revoked"))
            let recorder = PushRecorder(PushClient(container: signedOut, sleep: { _ in }))
            try await recorder.waitUntilFinished()
            #expect(recorder.events.last == "down notAuthenticated final")
            #expect(!recorder.events.contains("down networkFailure"))
        }
    }

    @Test func theClientReconnectsWhenTheServerComesBack() async throws {
        try await LiveServer.with { live in
            let (phone, laptop) = try await anaWithReadingList(live, other: "laptop")

            let pushes = PushRecorder(PushClient(container: phone))
            defer { pushes.stop() }
            try await pushes.wait(for: 1, "connected")

            try await withTimeout("the server to stop") { try await live.harness.stopServer() }
            try await pushes.wait(for: 1, "down")

            try await live.harness.restart()  // the same storage on the same port
            try await pushes.wait(for: 2, "connected")
            var record = Record(recordType: "Bookmark", recordID: Record.ID(recordName: "after", zoneID: readingList))
            record["title"] = "after the restart"
            try await laptop.privateCloudDatabase.save(record)
            try await pushes.wait(for: 1, "push")
            #expect(pushes.notifications.last?.recordZoneID?.zoneName == "ReadingList")
            pushes.stop()
        }
    }
}
