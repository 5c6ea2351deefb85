import Foundation
import Nimbus
import Testing

@Suite("Push notifications")
struct PushNotificationParsingTests {
    @Test func parsesRecordZoneNotifications() throws {
        let payload = #"""
            {"aps":{"content-available":1},
             "ck":{"cid":"iCloud.com.example.reader","nid":"n-42","ckuserid":"_u1",
                   "fet":{"dbs":2,"sid":"reading-list","zid":"ReadingList","zoid":"_u1"}}}
            """#
        let notification = try PushNotification(payload: Data(payload.utf8))
        #expect(notification.kind == .recordZone)
        #expect(notification.isContentAvailable)
        #expect(notification.containerIdentifier == "iCloud.com.example.reader")
        #expect(notification.notificationID == "n-42")
        #expect(notification.subscriptionOwnerUserRecordName == "_u1")
        #expect(notification.subscriptionID == "reading-list")
        #expect(notification.databaseScope == .private)
        #expect(notification.recordZoneID == ZoneID(zoneName: "ReadingList", ownerRecordName: "_u1"))
        #expect(notification.recordID == nil)
    }

    @Test func parsesQueryNotificationsWithFieldsAndAlert() throws {
        let payload = #"""
            {"aps":{"alert":{"title":"New bookmark","body":"Swift on the server"},"badge":3,"sound":"ping.aiff"},
             "ck":{"cid":"c","nid":"n1","qry":{"dbs":1,"fo":2,"rid":"r-9","sid":"s","zid":"_defaultZone",
                   "af":{"title":"Swift on the server","count":3}}}}
            """#
        let notification = try PushNotification(payload: Data(payload.utf8))
        #expect(notification.kind == .query)
        #expect(notification.databaseScope == .public)
        #expect(notification.queryNotificationReason == .recordUpdated)
        #expect(notification.recordID == Record.ID(recordName: "r-9", zoneID: ZoneID(zoneName: "_defaultZone")))
        #expect(notification.recordFields["title"] == .string("Swift on the server"))
        #expect(notification.recordFields["count"] == .int64(3))
        #expect(notification.title == "New bookmark")
        #expect(notification.alertBody == "Swift on the server")
        #expect(notification.badge == 3)
        #expect(notification.soundName == "ping.aiff")
        #expect(!notification.isContentAvailable)
    }

    @Test func parsesDatabaseNotificationsAndRejectsNonCloudKitPayloads() throws {
        let database = try PushNotification(
            payload: Data(#"{"aps":{"content-available":1},"ck":{"met":{"dbs":3,"sid":"db"}}}"#.utf8))
        #expect(database.kind == .database)
        #expect(database.databaseScope == .shared)
        #expect(database.subscriptionID == "db")
        #expect(throws: NimbusError.self) { try PushNotification(payload: Data(#"{"aps":{}}"#.utf8)) }
        #expect(throws: NimbusError.self) { try PushNotification(payload: Data("nope".utf8)) }
    }
}

/// A push transport that plays a script, one entry per connection attempt.
final class ScriptedPushTransport: PushTransport, Sendable {
    enum Step: Sendable {
        /// Connects, delivers these messages, then the server closes the connection.
        case deliver([String])
        /// Connects, delivers these messages, then stays open until cancelled.
        case deliverAndStay([String])
        /// The connection attempt fails.
        case fail(NimbusError)
    }

    private let steps: Locked<[Step]>
    private let log = Locked<[(url: URL, headers: [String: String])]>([])

    init(_ steps: [Step]) {
        self.steps = Locked(steps)
    }

    var connections: [(url: URL, headers: [String: String])] { log.withLock { $0 } }

    func connect(
        url: URL, headers: [String: String], onOpen: @escaping @Sendable () async -> Void,
        onMessage: @escaping @Sendable (String) async -> Void
    ) async throws {
        log.withLock { $0.append((url, headers)) }
        let step = steps.withLock { $0.isEmpty ? Step.deliverAndStay([]) : $0.removeFirst() }
        switch step {
        case .fail(let error):
            throw error
        case .deliver(let messages):
            await onOpen()
            for message in messages { await onMessage(message) }
        case .deliverAndStay(let messages):
            await onOpen()
            for message in messages { await onMessage(message) }
            // Stays connected until the client stops listening.
            try await Task.sleep(for: .seconds(3600))
        }
    }
}

@Suite("Push client")
struct PushClientTests {
    static func zonePush(_ zone: String) -> String {
        #"{"aps":{"content-available":1},"ck":{"cid":"c","nid":"n","fet":{"dbs":2,"sid":"s","zid":"\#(zone)"}}}"#
    }

    @Test func urlCarriesContainerEnvironmentCredentialsAndDeviceID() {
        let container = makeContainer(TestTransport(responses: []), baseURL: "https://sync.example.com/base/")
        let url = PushClient(container: container).url
        #expect(url.scheme == "wss")
        #expect(url.path == "/base/push/iCloud.com.example.reader/development")
        #expect(url.query == "ckAPIToken=api%2B%2F%3Dtoken&ckWebAuthToken=web%20token&deviceID=device-A")
        let plain = makeContainer(TestTransport(responses: []), baseURL: "http://127.0.0.1:8080")
        #expect(PushClient(container: plain).url.absoluteString.hasPrefix("ws://127.0.0.1:8080/push/"))
    }

    @Test func reconnectsWithBackoffAndDeliversNotifications() async throws {
        let transport = ScriptedPushTransport([
            .fail(NimbusError(.networkUnavailable, "down")),
            .fail(NimbusError(.networkUnavailable, "still down")),
            .deliver([Self.zonePush("A"), "not json"]),
            .deliverAndStay([Self.zonePush("B")]),
        ])
        let waits = Locked<[Duration]>([])
        let client = PushClient(
            container: makeContainer(TestTransport(responses: [])),
            reconnectPolicy: RetryPolicy(maxAttempts: .max, initialBackoff: .seconds(1), maximumBackoff: .seconds(8), jitter: 0),
            transport: transport, sleep: { duration in waits.withLock { $0.append(duration) } }, random: { 0 })

        let log = try await withTimeout {
            var log: [String] = []
            for await event in client.events() {
                switch event {
                case .connected: log.append("connected")
                case .notification(let notification): log.append("push \(notification.recordZoneID!.zoneName)")
                case .disconnected(let error, let wait): log.append("down \(error.code) \(wait.map { "\($0)" } ?? "-")")
                }
                if log.count == 7 { break }
            }
            return log
        }

        #expect(log == [
            "down networkUnavailable 1.0 seconds", "down networkUnavailable 2.0 seconds",
            "connected", "push A", "down networkFailure 1.0 seconds",  // a drop after a connection starts over
            "connected", "push B",
        ])
        #expect(waits.withLock { $0 } == [.seconds(1), .seconds(2), .seconds(1)])
        #expect(transport.connections.count == 4)
        #expect(transport.connections.allSatisfy { $0.headers["X-Nimbus-Device-ID"] == "device-A" })
        #expect(transport.connections.allSatisfy { $0.url.query?.contains("deviceID=device-A") == true })
    }

    @Test func givesUpWhenTheServerRefusesTheCredentials() async throws {
        let transport = ScriptedPushTransport([.fail(NimbusError(.notAuthenticated, "bad token"))])
        let client = PushClient(
            container: makeContainer(TestTransport(responses: [])), transport: transport, sleep: { _ in })
        let events = try await withTimeout {
            var events: [PushEvent] = []
            for await event in client.events() { events.append(event) }
            return events
        }
        guard events.count == 1, case .disconnected(let error, nil) = events[0] else {
            Issue.record("expected one final disconnection, got \(events)")
            return
        }
        #expect(error.code == .notAuthenticated)
        #expect(transport.connections.count == 1)
    }

    @Test func notificationsSequenceYieldsOnlyPushes() async throws {
        let transport = ScriptedPushTransport([
            .fail(NimbusError(.networkFailure, "x")), .deliverAndStay([Self.zonePush("A"), Self.zonePush("B")]),
        ])
        let client = PushClient(
            container: makeContainer(TestTransport(responses: [])), transport: transport, sleep: { _ in })
        let zones = try await withTimeout {
            var zones: [String] = []
            for await notification in client.notifications() {
                zones.append(notification.recordZoneID?.zoneName ?? "?")
                if zones.count == 2 { break }
            }
            return zones
        }
        #expect(zones == ["A", "B"])
    }
}

@Suite("Notification collection")
struct NotificationCollectionTests {
    @Test func readsPagesOfNotificationsAndMarksThemRead() async throws {
        let payload: JSON = [
            "aps": ["content-available": 1],
            "ck": ["cid": "c", "nid": "n1", "fet": ["dbs": 2, "sid": "reading-list", "zid": "ReadingList"]],
        ]
        let transport = TestTransport { request in
            if request.url.path.hasSuffix("notifications/markRead") {
                return .json([
                    "notifications": [
                        ["notificationID": "n1", "isRead": true],
                        ["notificationID": "zz", "serverErrorCode": "NOT_FOUND", "reason": "no such notification"],
                    ]
                ])
            }
            return .json([
                "notifications": [
                    [
                        "notificationID": "n1", "notificationType": "zone", "subscriptionID": "reading-list",
                        "databaseScope": "private", "zoneID": ["zoneName": "ReadingList", "ownerRecordName": "_u1"],
                        "isRead": false, "createdTimestamp": 1_700_000_000_000, "payload": payload,
                    ]
                ],
                "syncToken": "nt-1", "moreComing": false,
            ])
        }
        let container = makeContainer(transport)
        let page = try await container.notificationChanges(since: nil, resultsLimit: 50)
        let notification = try #require(page.notifications.first)
        #expect(notification.kind == .recordZone)
        #expect(notification.notificationID == "n1")
        #expect(notification.subscriptionID == "reading-list")
        #expect(notification.databaseScope == .private)
        #expect(notification.recordZoneID?.zoneName == "ReadingList")
        #expect(!notification.isRead)
        #expect(notification.creationDate == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(!page.moreComing)
        #expect(transport.bodies.first?["resultsLimit"] == 50)

        let marks = try await container.markNotificationsRead(["n1", "zz"])
        #expect((try? marks["n1"]?.get()) != nil)
        #expect(marks["zz"].flatMap { try? $0.failureValue }?.code == .unknownItem)
        #expect(transport.bodies.last?["notificationIDs"] == ["n1", "zz"])
    }

    @Test func aCatchUpPushSaysHowManyItStandsFor() throws {
        let notification = try PushNotification(payload: Data(
            #"{"aps":{"content-available":1},"ck":{"met":{"dbs":2,"sid":"db"}},"nimbus":{"coalesced":4}}"#.utf8))
        #expect(notification.coalescedCount == 4)
    }
}
