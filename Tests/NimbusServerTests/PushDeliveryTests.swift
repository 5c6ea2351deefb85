import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Pushes over real WebSocket connections to a real server: who gets them, in which shape,
/// and what an offline device gets when it comes back.
@Suite("Push delivery")
struct PushDeliveryTests {
    @Test(arguments: Engine.available) func theOtherDeviceOfTheUserIsPushedTheOriginatorAndOtherUsersAreNot(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            _ = try await alice.createZone("ReadingList")
            _ = try await bob.createZone("ReadingList")
            #expect(try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList")).status == 200)
            #expect(try await bob.subscribe(zoneSubscription("bobs-list", zone: "ReadingList")).status == 200)

            let phoneA = try await PushTestDevice.connect(alice, deviceID: "alice-A")
            let phoneB = try await PushTestDevice.connect(alice, deviceID: "alice-B")
            let bobsPhone = try await PushTestDevice.connect(bob, deviceID: "bob-C")

            // Device A bookmarks an article.
            let saved = try await alice.onDevice("alice-A").modify(
                "ReadingList", [op("create", "article-1", "Bookmark", fields: ["title": "Hello"])])
            #expect(saved.status == 200)

            // Device B gets exactly Apple's payload shape.
            let push = try await phoneB.next()
            let nid = try #require(push["ck"]?["nid"]?.string)
            let expected: JSON = [
                "aps": ["content-available": 1],
                "ck": [
                    "ce": 2, "cid": .string(TestServer.container), "ckuserid": .string(alice.userRecordName!),
                    "nid": .string(nid),
                    "fet": [
                        "dbs": 2, "sid": "reading-list", "zid": "ReadingList", "zoid": .string(alice.userRecordName!),
                    ],
                ],
            ]
            #expect(push == expected)
            // The notification is the one in the collection.
            #expect(try await alice.allNotifications().map { $0["notificationID"]?.string } == [nid])

            // Device A (the originator) was not pushed: its first push is about B's change.
            _ = try await alice.onDevice("alice-B").modify("ReadingList", [op("forceDelete", "article-1")])
            let pushToA = try await phoneA.next()
            let secondNID = try #require(pushToA["ck"]?["nid"]?.string)
            #expect(secondNID != nid)
            #expect(try await alice.allNotifications().last?["notificationID"]?.string == secondNID)

            // Bob was pushed nothing of Alice's: his first push is about his own zone.
            _ = try await bob.onDevice("bob-laptop").modify("ReadingList", [op("create", "x", "Bookmark")])
            let bobsPush = try await bobsPhone.next()
            #expect(bobsPush["ck"]?["ckuserid"]?.string == bob.userRecordName)
            #expect(bobsPush["ck"]?["fet"]?["sid"] == "bobs-list")
            #expect(await bobsPhone.pending == 0)

            await phoneA.disconnect()
            await phoneB.disconnect()
            await bobsPhone.disconnect()
        }
    }

    /// A fan-out hands each event loop its devices' writes a few at a time; with more devices
    /// than fit in one hand-off, every device still gets every push, once, in commit order.
    @Test(arguments: Engine.available) func everyDeviceOfAUserWithManyDevicesGetsEachPushOnceInOrder(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("ReadingList")
            #expect(try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList")).status == 200)
            var devices: [PushTestDevice] = []
            for index in 0..<41 {
                devices.append(try await PushTestDevice.connect(alice, deviceID: "device-\(index)"))
            }
            for index in 0..<3 {
                let saved = try await alice.onDevice("laptop").modify(
                    "ReadingList", [op("create", "article-\(index)", "Bookmark")])
                #expect(saved.status == 200)
            }
            let nids = try await alice.allNotifications().map { $0["notificationID"]?.string }
            #expect(nids.count == 3)
            for device in devices {
                var received: [String?] = []
                for _ in 0..<3 { received.append(try await device.next()["ck"]?["nid"]?.string) }
                #expect(received == nids)
                #expect(await device.pending == 0)
            }
            for device in devices { await device.disconnect() }
        }
    }

    @Test(arguments: Engine.available) func anOfflineDeviceGetsOneCoalescedPushOnReconnectAndReadsTheRestFromTheCollection(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("ReadingList")
            _ = try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList"))
            let tablet = alice.onDevice("tablet")

            // The tablet is online once (so the server knows it), reads the collection, goes away.
            let first = try await PushTestDevice.connect(alice, deviceID: "tablet")
            let token = try #require(try await tablet.notificationChanges()["syncToken"]?.string)
            await first.disconnect()
            try await server.waitForDevices(0, of: alice)

            // Meanwhile the phone saves three times, and the tablet (over HTTP) once.
            for index in 1...3 {
                _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "a\(index)", "Bookmark")])
            }
            _ = try await tablet.modify("ReadingList", [op("create", "own", "Bookmark")])

            // On reconnect: one push, the latest of the three it missed (not its own change).
            let back = try await PushTestDevice.connect(alice, deviceID: "tablet")
            let push = try await back.next()
            #expect(push["nimbus"]?["coalesced"] == 3)
            #expect(push["ck"]?["fet"]?["zid"] == "ReadingList")
            let missed = try #require(try await tablet.notificationChanges(since: token)["notifications"]?.array)
            #expect(missed.count == 4)
            #expect(push["ck"]?["nid"] == missed[2]["notificationID"])

            // Live pushes continue after the catch-up push, and nothing else was queued.
            _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "a4", "Bookmark")])
            let live = try await back.next()
            #expect(live["nimbus"] == nil)
            #expect(await back.pending == 0)

            // A device back with nothing missed gets no catch-up push.
            await back.disconnect()
            try await server.waitForDevices(0, of: alice)
            let again = try await PushTestDevice.connect(alice, deviceID: "tablet")
            _ = try await alice.onDevice("phone").modify("ReadingList", [op("create", "a5", "Bookmark")])
            #expect(try await again.next()["nimbus"] == nil)
            await again.disconnect()
        }
    }

    @Test(arguments: Engine.available) func queryPushesFollowTheRecordIntoAndOutOfTheFilter(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("News")
            let subscription = querySubscription(
                "bookmarked", recordType: "Article", filters: [filter("bookmarked", "EQUALS", 1)], zone: "News",
                desiredKeys: ["title", "bookmarked"])
            #expect(try await alice.subscribe(subscription).status == 200)
            let reader = try await PushTestDevice.connect(alice, deviceID: "reader")
            let writer = alice.onDevice("writer")

            func save(_ type: String, _ name: String, _ fields: [String: JSON], tag: String? = nil) async throws -> String? {
                let reply = try await writer.modify("News", [op(type, name, "Article", fields: fields, tag: tag)])
                #expect(reply.status == 200)
                return reply.records.first?["recordChangeTag"]?.string
            }
            _ = try await save("create", "a1", ["title": "Swift", "bookmarked": 0])  // outside: nothing
            _ = try await save("forceUpdate", "a1", ["bookmarked": 1])  // enters: updated
            _ = try await save("forceUpdate", "a1", ["title": "Swift 6"])  // stays in: updated
            _ = try await save("forceUpdate", "a1", ["bookmarked": 0])  // leaves: nothing
            _ = try await save("create", "a2", ["title": "Sync", "bookmarked": 1])  // created inside
            _ = try await writer.modify("News", [op("forceDelete", "a2")])  // matched before: deleted
            _ = try await writer.modify("News", [op("forceDelete", "a1")])  // did not match: nothing
            _ = try await save("create", "a3", ["title": "Last", "bookmarked": 1])  // created inside

            var seen: [(String, Int64, JSON?)] = []
            for _ in 0..<5 {
                let push = try await reader.next()
                let query = try #require(push["ck"]?["qry"])
                #expect(query["sid"] == "bookmarked")
                #expect(query["dbs"] == 2)
                #expect(query["zid"] == "News")
                #expect(query["zoid"]?.string == alice.userRecordName)
                seen.append((query["rid"]?.string ?? "", query["fo"]?.int64 ?? 0, query["af"]))
            }
            #expect(seen.map(\.0) == ["a1", "a1", "a2", "a2", "a3"])
            #expect(seen.map(\.1) == [2, 2, 1, 3, 1])
            #expect(seen[0].2 == ["title": "Swift", "bookmarked": 1])
            #expect(seen[1].2 == ["title": "Swift 6", "bookmarked": 1])
            #expect(seen[3].2 == ["title": "Sync", "bookmarked": 1])
            #expect(await reader.pending == 0)
            await reader.disconnect()
        }
    }

    @Test(arguments: Engine.available) func aFiresOnceSubscriptionFiresForOneRecordAndIsThenDeleted(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let once = querySubscription(
                "once", recordType: "Alert", filters: [filter("level", "GREATER_THAN", 5)], firesOn: ["create"],
                firesOnce: true)
            let marker = querySubscription("marker", recordType: "Marker", firesOn: ["create"])
            _ = try await alice.subscribe(once)
            _ = try await alice.subscribe(marker)
            let device = try await PushTestDevice.connect(alice, deviceID: "watch")
            let writer = alice.onDevice("phone")

            _ = try await writer.modify("_defaultZone", [op("create", "low", "Alert", fields: ["level": 3])])
            // Two matching records in one commit: one notification, then the subscription is gone.
            _ = try await writer.modify(
                "_defaultZone",
                [op("create", "high", "Alert", fields: ["level": 7]), op("create", "higher", "Alert", fields: ["level": 8])])
            _ = try await writer.modify("_defaultZone", [op("create", "highest", "Alert", fields: ["level": 9])])
            _ = try await writer.modify("_defaultZone", [op("create", "m", "Marker")])

            let fired = try await device.next()
            #expect(fired["ck"]?["qry"]?["sid"] == "once")
            #expect(fired["ck"]?["qry"]?["rid"] == "high")
            #expect(fired["ck"]?["qry"]?["fo"] == 1)
            #expect(try await device.next()["ck"]?["qry"]?["sid"] == "marker")

            let lookup = try await alice.post("subscriptions/lookup", ["subscriptions": [["subscriptionID": "once"]]])
            #expect(lookup["subscriptions"]?.array?.first?["serverErrorCode"] == "NOT_FOUND")
            let list = try await alice.get("subscriptions/list")
            #expect(list["subscriptions"]?.array?.compactMap { $0["subscriptionID"]?.string } == ["marker"])
            await device.disconnect()
        }
    }

    @Test(arguments: Engine.available) func databaseAndZoneSubscriptionsFireForZonesCreatedAndDeleted(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("History")
            _ = try await alice.subscribe(databaseSubscription("everything"))
            _ = try await alice.subscribe(zoneSubscription("history", zone: "History"))
            let device = try await PushTestDevice.connect(alice, deviceID: "mac")

            _ = try await alice.createZone("ReadingList")
            let created = try await device.next()
            #expect(created["ck"]?["met"] == ["dbs": 2, "sid": "everything"])

            _ = try await alice.modify("History", [op("create", "h1", "Visit")])
            let pushes = [try await device.next(), try await device.next()]
            #expect(Set(pushes.compactMap { $0["ck"]?["met"]?["sid"]?.string ?? $0["ck"]?["fet"]?["sid"]?.string }) == ["everything", "history"])

            _ = try await alice.post(
                "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "History"]]]]])
            let deleted = [try await device.next(), try await device.next()]
            #expect(deleted.contains { $0["ck"]?["fet"]?["zid"] == "History" })
            #expect(deleted.contains { $0["ck"]?["met"]?["sid"] == "everything" })
            #expect(await device.pending == 0)
            await device.disconnect()
        }
    }

    @Test(arguments: Engine.available) func alertsBadgesAndSoundsTravelInAps(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let subscription: JSON = [
                "subscriptionID": "mentions", "subscriptionType": "query",
                "query": ["recordType": "Message"], "firesOn": ["create"],
                "notificationInfo": [
                    "alertBody": "New message", "alertLocalizationKey": "MSG_FROM", "alertLocalizationArgs": ["sender"],
                    "soundName": "ping.aiff", "shouldBadge": true, "category": "MESSAGE", "desiredKeys": ["sender"],
                ],
            ]
            _ = try await alice.subscribe(subscription)
            let device = try await PushTestDevice.connect(alice, deviceID: "phone")
            for sender in ["Bob", "Carol"] {
                _ = try await alice.modify("_defaultZone", [op("create", "m-\(sender)", "Message", fields: ["sender": .string(sender)])])
            }
            let first = try await device.next()
            #expect(first["aps"] == [
                "alert": ["body": "New message", "loc-key": "MSG_FROM", "loc-args": ["Bob"]],
                "sound": "ping.aiff", "badge": 1, "category": "MESSAGE",
            ])
            #expect(first["ck"]?["qry"]?["af"] == ["sender": "Bob"])
            let second = try await device.next()
            #expect(second["aps"]?["badge"] == 2)
            // Reading one lowers the next badge.
            let firstID = try #require(first["ck"]?["nid"]?.string)
            _ = try await alice.markRead([firstID])
            _ = try await alice.modify("_defaultZone", [op("create", "m-Dan", "Message", fields: ["sender": "Dan"])])
            #expect(try await device.next()["aps"]?["badge"] == 2)
            await device.disconnect()
        }
    }
}
