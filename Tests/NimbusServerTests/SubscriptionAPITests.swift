import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `subscriptions/list`, `subscriptions/lookup` and `subscriptions/modify` in Apple's shapes.
@Suite("Subscriptions API")
struct SubscriptionAPITests {
    @Test(arguments: Engine.available) func createListLookupReplaceAndDeleteRoundTrip(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("ReadingList")
            let created = try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList"))
            #expect(created.status == 200)
            let saved = try #require(created["subscriptions"]?.array?.first)
            #expect(saved == [
                "subscriptionID": "reading-list", "subscriptionType": "zone",
                "zoneID": ["zoneName": "ReadingList", "ownerRecordName": .string(alice.userRecordName!)],
                "notificationInfo": ["shouldSendContentAvailable": true, "shouldBadge": false],
            ])
            let query = querySubscription(
                "unread", recordType: "Article", filters: [filter("read", "EQUALS", 0)], firesOn: ["create", "delete"],
                zone: "ReadingList", desiredKeys: ["title"])
            let savedQuery = try #require(try await alice.subscribe(query)["subscriptions"]?.array?.first)
            #expect(savedQuery["firesOn"] == ["create", "delete"])
            #expect(savedQuery["query"]?["filterBy"]?.array?.first?["comparator"] == "EQUALS")
            #expect(savedQuery["notificationInfo"]?["desiredKeys"] == ["title"])

            let list = try await alice.get("subscriptions/list")
            #expect(list["subscriptions"]?.array?.map { $0["subscriptionID"] } == ["reading-list", "unread"])

            // Saving the same ID again replaces it (the SDK's save is create-or-replace).
            let replaced = try await alice.subscribe(zoneSubscription("reading-list", zone: "ReadingList", info: ["alertBody": "Hi"]))
            #expect(replaced["subscriptions"]?.array?.first?["notificationInfo"]?["alertBody"] == "Hi")
            #expect(try await alice.get("subscriptions/list")["subscriptions"]?.array?.count == 2)

            let lookup = try await alice.post(
                "subscriptions/lookup", ["subscriptions": [["subscriptionID": "unread"], ["subscriptionID": "nope"]]])
            let found = try #require(lookup["subscriptions"]?.array)
            #expect(found[0]["subscriptionType"] == "query")
            #expect(found[1]["serverErrorCode"] == "NOT_FOUND")
            #expect(found[1]["subscriptionID"] == "nope")

            let deleted = try await alice.post(
                "subscriptions/modify",
                ["operations": [
                    ["operationType": "delete", "subscription": ["subscriptionID": "unread"]],
                    ["operationType": "delete", "subscription": ["subscriptionID": "unread-again"]],
                ]])
            #expect(deleted["subscriptions"]?.array?.first == ["subscriptionID": "unread", "deleted": true])
            #expect(deleted["subscriptions"]?.array?.last?["serverErrorCode"] == "NOT_FOUND")

            // Another user sees none of them.
            let bob = try await server.user("bob")
            #expect(try await bob.get("subscriptions/list")["subscriptions"] == [])
        }
    }

    @Test(arguments: Engine.available) func invalidSubscriptionsAreRejectedWithClearReasons(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let zoneWithKeys = zoneSubscription("z", zone: "Z", info: ["shouldSendContentAvailable": true, "desiredKeys": ["title"]])
            let rejected = try await alice.subscribe(zoneWithKeys)
            #expect(rejected.status == 400)
            #expect(rejected.serverErrorCode == "BAD_REQUEST")
            #expect(rejected["reason"]?.string?.contains("desiredKeys") == true)
            #expect(rejected["reason"]?.string?.contains("operations[0].subscription.notificationInfo.desiredKeys") == true)

            let defaultZone = try await alice.subscribe(zoneSubscription("d", zone: "_defaultZone"))
            #expect(defaultZone.serverErrorCode == "BAD_REQUEST")
            #expect(defaultZone["reason"]?.string?.contains("default zone") == true)

            let missingZone = try await alice.subscribe(zoneSubscription("m", zone: "Nowhere"))
            #expect(missingZone.status == 200)
            #expect(missingZone["subscriptions"]?.array?.first?["serverErrorCode"] == "ZONE_NOT_FOUND")

            let badComparator = try await alice.subscribe(
                querySubscription("q", recordType: "A", filters: [filter("x", "LIKE", 1)]))
            #expect(badComparator.serverErrorCode == "BAD_REQUEST")
            #expect(badComparator["reason"]?.string?.contains("filterBy[0].comparator") == true)

            let anonymous = server.anonymous()
            let noUser = try await anonymous.subscribe(querySubscription("q", recordType: "A"), scope: "public")
            #expect(noUser.serverErrorCode == "AUTHENTICATION_REQUIRED")
        }
    }

    @Test(arguments: Engine.available) func thePublicDatabaseHasPerUserQuerySubscriptionsOnly(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let query = querySubscription("news", recordType: "Article", firesOn: ["create"])
            #expect(try await alice.subscribe(query, scope: "public")["subscriptions"]?.array?.first?["subscriptionID"] == "news")
            #expect(try await bob.subscribe(query, scope: "public")["subscriptions"]?.array?.first?["subscriptionID"] == "news")
            #expect(try await alice.get("subscriptions/list", scope: "public")["subscriptions"]?.array?.count == 1)

            let zone = try await alice.subscribe(zoneSubscription("z", zone: "_defaultZone"), scope: "public")
            #expect(zone.serverErrorCode == "BAD_REQUEST")
            let database = try await alice.subscribe(databaseSubscription("d"), scope: "public")
            #expect(database.serverErrorCode == "BAD_REQUEST")

            // A public record created by Alice notifies Bob (and Alice's other devices), each
            // through their own subscription.
            let bobsPhone = try await PushTestDevice.connect(bob, deviceID: "bob-phone")
            _ = try await alice.onDevice("alice-mac").modify("_defaultZone", [op("create", "a1", "Article")], scope: "public")
            let push = try await bobsPhone.next()
            #expect(push["ck"]?["ckuserid"]?.string == bob.userRecordName)
            #expect(push["ck"]?["qry"]?["dbs"] == 1)
            #expect(push["ck"]?["qry"]?["zoid"] == "_defaultOwner")
            #expect(try await alice.allNotifications().count == 1)
            await bobsPhone.disconnect()
        }
    }
}
