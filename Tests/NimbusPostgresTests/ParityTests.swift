import Foundation
import NimbusProtocol
import NimbusSQLite
import NimbusStore
import PostgresNIO
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    /// The same script of operations against SQLiteStore and PostgresStore gives the same
    /// answers: results, errors (codes and messages), tokens, versions, notifications.
    @Suite("Parity with SQLite")
    struct ParityTests {
        @Test func theMainOperationsAnswerAsSQLiteDoes() async throws {
            try await Parity.expectSameAnswers { try await ParityScript.run(on: $0) }
        }
    }
}

/// A script exercising every store operation; returns one line per answer, with what is
/// random by design (notification IDs, tokens) blanked out. Both stores read ``clock``, so the
/// times they stamp themselves (zone changes' notifications, deleted zones, tokens) compare too.
enum ParityScript {
    /// The stores' clock: after the policies' times of the script's writes (1 000 to 6 000 ms)
    /// and before the `now` of its last compactions (20 000 ms).
    static let clock = WallClock.fixed(millis: 9_000)
    static let alice = DatabaseKey.privateDatabase(of: "_alice")
    static let publicDatabase = DatabaseKey(container: "iCloud.test", environment: .development, scope: .public, owner: DatabaseKey.publicOwner)
    static let caller = Caller(userRecordName: "_alice", deviceID: "phone")
    static let zoneClosing = #","zoneID":{"ownerRecordName":"_alice","zoneName":"Z"}}"#
    static let recipient = NotificationRecipient(container: "iCloud.test", environment: .development, userRecordName: "_alice")

    static func run(on store: any NimbusStorage) async throws -> [String] {
        var log: [String] = []
        func note(_ value: Any) { log.append(normalized(String(describing: value))) }
        func attempt(_ body: () async throws -> Any) async {
            do { note(try await body()) } catch { note("error: \(error)") }
        }
        func modify(_ operations: [RecordOperation], zone: String = "Z", atomic: Bool = false, now: Int64 = 1_000, in database: DatabaseKey = alice) async -> ModifyOutcome? {
            do {
                let outcome = try await store.modifyRecords(
                    operations, zone: zone, atomic: atomic, policy: WritePolicy(creatorOnlyWrites: database.scope == .public, now: now),
                    caller: caller, in: database)
                note(outcome.results)
                note(outcome.commit.map { ($0.version, $0.changes.map { "\($0.before?.version ?? -1)->\($0.after)" }, $0.notifications) } as Any)
                return outcome
            } catch {
                note("error: \(error)")
                return nil
            }
        }
        typealias R = Requests

        // Zones and feeds of a database never written.
        await attempt { try await store.listZones(in: alice) }
        await attempt { try await store.lookupZones(["_defaultZone", "Z"], in: alice) }
        await attempt { try await store.recordChanges(zone: "_defaultZone", since: nil, limit: 10, in: alice) }
        await attempt { try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: alice) }
        await attempt { try await store.databaseChanges(since: nil, limit: 10, in: alice) }
        await attempt { try await store.lookupRecords(["a"], zone: "_defaultZone", in: alice) }

        // Zones.
        await attempt { try await store.modifyZones([.create(zoneName: "Z"), .create(zoneName: "Y"), .create(zoneName: "Z"), .delete(zoneName: "Y"), .delete(zoneName: "_defaultZone"), .delete(zoneName: "nope")], caller: caller, in: alice).results }
        await attempt { try await store.listZones(in: alice) }
        await attempt { try await store.zoneMetaChanges(since: nil, limit: 10, in: alice) }

        // Subscriptions.
        let database = SubscriptionDefinition(subscriptionID: "db", kind: .database)
        let zone = SubscriptionDefinition(subscriptionID: "zone-z", kind: .zone(zoneName: "Z", recordType: nil), notificationInfo: NotificationInfo(shouldBadge: true))
        let query = SubscriptionDefinition(
            subscriptionID: "big-items",
            kind: .query(RecordQuery(recordType: "Item", filters: [QueryFilter(field: "n", .greaterThan, 5)]), scope: .zone("Z"), firesOn: [.create, .update, .delete], firesOnce: false),
            notificationInfo: NotificationInfo(alertBody: "big", shouldBadge: true, desiredKeys: ["n"]))
        let once = SubscriptionDefinition(
            subscriptionID: "once",
            kind: .query(RecordQuery(recordType: "Item"), scope: .allZones, firesOn: [.create], firesOnce: true))
        let missingZone = SubscriptionDefinition(subscriptionID: "ghost", kind: .zone(zoneName: "Ghost", recordType: nil))
        await attempt { try await store.modifySubscriptions([.save(database), .save(zone), .save(query), .save(once), .save(missingZone), .delete(subscriptionID: "none"), .save(database)], owner: "_alice", in: alice) }
        await attempt { try await store.listSubscriptions(owner: "_alice", in: alice) }
        await attempt { try await store.lookupSubscriptions(["zone-z", "ghost"], owner: "_alice", in: alice) }

        // Records: create, locked saves, EXISTS, CONFLICT, references, cascades, atomic batches.
        let a = await modify([
            R.operation(.create, R.record("a", fields: ["n": 7])),
            R.operation(.create, R.record("b", fields: ["n": 1, "parent": .reference(Reference(recordName: "a", action: .deleteSelf))])),
            R.operation(.create, R.record("c", fields: ["parent": .reference(Reference(recordName: "b", action: .deleteSelf))])),
            R.operation(.create, R.record("v", fields: ["must": .reference(Reference(recordName: "missing", action: .validate))])),
            R.operation(.create, R.record("a")),
        ])
        let tagA = a.flatMap { if case .saved(let record) = $0.results[0] { record.changeTag } else { nil } }
        _ = await modify([R.operation(.update, R.record("a", tag: tagA, fields: ["title": "hello"]))], now: 2_000)
        _ = await modify([R.operation(.update, R.record("a", tag: tagA, fields: ["title": "stale"]))], now: 3_000)
        _ = await modify([R.operation(.replace, R.record("b", tag: "zz", fields: [:])), R.operation(.update, R.record("nope", tag: "1")), R.operation(.forceReplace, R.record("d", fields: ["n": 9]))], now: 4_000)
        _ = await modify([R.operation(.create, R.record("e")), R.operation(.create, R.record("a"))], atomic: true)
        _ = await modify([R.operation(.create, R.record("x")), R.operation(.forceDelete, R.record("x"))])
        _ = await modify([R.operation(.create, R.record("y")), R.operation(.create, R.record("y"))])
        _ = await modify([R.operation(.update, R.record("a", fields: [:]))])
        _ = await modify([R.operation(.create, R.record("nowhere"))], zone: "Ghost")
        await attempt { try await store.lookupRecords(["a", "b", "c", "d", "zz"], zone: "Z", in: alice) }

        // The feed in pages, then a cascade, then the feed from the old token.
        var pages: [RecordChangesPage] = []
        var token: String?
        repeat {
            let page = try await store.recordChanges(zone: "Z", since: token, limit: 2, in: alice)
            note(page)
            // The same page written for the wire: same entries (as the engine wrote them), same token.
            note(try await store.writtenRecordChanges(zone: "Z", since: token, limit: 2, zoneClosing: ParityScript.zoneClosing, in: alice))
            pages.append(page)
            token = page.syncToken
        } while pages.last?.moreComing == true
        _ = await modify([R.operation(.forceDelete, R.record("a"))], now: 5_000)
        await attempt { try await store.recordChanges(zone: "Z", since: token, limit: 10, in: alice) }
        await attempt { try await store.recordChanges(zone: "Z", since: pages[0].syncToken, limit: 10, in: alice) }
        await attempt { try await store.writtenRecordChanges(zone: "Z", since: pages[0].syncToken, limit: 10, zoneClosing: ParityScript.zoneClosing, in: alice) }
        await attempt { try await store.writtenRecordChanges(zone: "Nope", since: nil, limit: 10, zoneClosing: ParityScript.zoneClosing, in: alice) }
        await attempt { try await store.writtenRecordChanges(zone: "_defaultZone", since: nil, limit: 10, zoneClosing: ParityScript.zoneClosing, in: alice) }
        await attempt { try await store.databaseChanges(since: nil, limit: 10, in: alice) }
        await attempt { try await store.recordChanges(zone: "Z", since: "garbage", limit: 10, in: alice) }

        // The public database: only a record's creator changes it.
        _ = await modify([R.operation(.create, R.record("p"))], zone: "_defaultZone", in: publicDatabase)

        // The notification collection.
        var notificationToken: String?
        repeat {
            let page = try await store.notificationChanges(for: recipient, since: notificationToken, limit: 3)
            note(page)
            notificationToken = page.syncToken
            if !page.moreComing { break }
        } while true
        let first = try await store.notificationChanges(for: recipient, since: nil, limit: 2)
        await attempt { try await store.markNotificationsRead(first.notifications.map(\.notificationID) + ["nope"] + first.notifications.map(\.notificationID), for: recipient) }
        await attempt { try await store.notificationChanges(for: recipient, since: notificationToken, limit: 10) }
        await attempt { try await store.catchUp(device: "tablet", for: recipient, now: 10_000) as Any }
        _ = await modify([R.operation(.forceUpdate, R.record("d", fields: ["n": 10]))], now: 6_000)
        await attempt { try await store.catchUp(device: "tablet", for: recipient, now: 11_000) as Any }
        try await store.disconnect(device: "tablet", for: recipient, deliveredThrough: 1, now: 12_000)
        await attempt { try await store.catchUp(device: "tablet", for: recipient, now: 13_000) as Any }
        let pushToken = try await store.createPushToken(for: recipient, apnsEnvironment: "development", now: 1)
        note(pushToken.registered)
        await attempt { try await store.registerPushToken(pushToken.token, for: recipient, apnsEnvironment: "production", now: 2).registered }
        await attempt { try await store.pushToken(pushToken.token)?.apnsEnvironment as Any }
        await attempt { try await store.registerPushToken(pushToken.token, for: NotificationRecipient(container: "iCloud.test", environment: .development, userRecordName: "_mallory"), apnsEnvironment: "production", now: 3) }
        await attempt { try await store.registerPushToken("made-up", for: recipient, apnsEnvironment: "production", now: 4) }

        // Compaction: tombstones go, old tokens expire; a deleted and re-created zone's token is ZONE_NOT_FOUND.
        await attempt { try await store.compact(retentionMillis: 0, now: 5_000) }
        await attempt { try await store.recordChanges(zone: "Z", since: pages[0].syncToken, limit: 10, in: alice) }
        await attempt { try await store.modifyZones([.delete(zoneName: "Z"), .create(zoneName: "Z")], caller: caller, in: alice).results }
        await attempt { try await store.recordChanges(zone: "Z", since: token, limit: 10, in: alice) }
        await attempt { try await store.writtenRecordChanges(zone: "Z", since: token, limit: 10, zoneClosing: ParityScript.zoneClosing, in: alice) }
        await attempt { try await store.zoneMetaChanges(since: pages[0].syncToken.isEmpty ? nil : try store.changeTokens.meta(version: 1, in: alice), limit: 10, in: alice) }
        await attempt { try await store.compactNotifications(retentionMillis: 0, now: 20_000) }
        await attempt { try await store.notificationChanges(for: recipient, since: notificationToken, limit: 10) }
        await attempt { try await store.compact(retentionMillis: 0, now: 20_000) }
        await attempt { try await store.databaseChanges(since: try store.changeTokens.database(version: 1, in: alice), limit: 10, in: alice) }

        // Provisioning (random tokens and record names are compared by shape).
        await attempt { try await store.createContainer("iCloud.parity").kind }
        await attempt { try await store.createContainer("iCloud.parity").kind }
        await attempt { try await store.createContainer("bad id!").kind }
        let web = try await store.createUser(name: "alice", email: "a@example.com", firstName: "A", lastName: nil, container: "iCloud.parity")
        let again = try await store.createUser(name: "alice", email: nil, firstName: nil, lastName: "L", container: "iCloud.parity")
        note(web.user?.recordName == again.user?.recordName)
        note([again.user?.email, again.user?.firstName, again.user?.lastName] as [String?])
        await attempt { try await store.createUser(name: "bob", email: nil, firstName: nil, lastName: nil, container: "iCloud.none").kind }
        let api = try await store.createAPIToken(container: "iCloud.parity")
        await attempt { try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token) }
        await attempt { try await store.user(recordName: web.user?.recordName ?? "", container: "iCloud.parity") as Any }
        // Tokens made in the same millisecond are ordered by their (random) value: compare as sets.
        await attempt {
            try await store.listTokens(container: "iCloud.parity").map { [$0.kind.rawValue, $0.user?.name ?? "-"] }
                .sorted { $0.lexicographicallyPrecedes($1) }
        }
        await attempt { try await store.revokeToken(web.token) }
        await attempt { try await store.revokeToken(web.token) }
        await attempt { try await store.lookUpTokens(apiToken: api.token, webAuthToken: web.token) }
        await attempt { try await store.user(forWebAuthToken: web.token) as Any }
        await attempt { try await store.container(forAPIToken: api.token) as Any }
        // Discovery: only users who opted in, per container, email addresses ignoring ASCII case.
        let aliceName = web.user?.recordName ?? ""
        await attempt { try await store.discoverableUsers(emailAddresses: ["a@example.com"], recordNames: [aliceName], container: "iCloud.parity") }
        await attempt { try await store.setDiscoverable(true, userName: "alice", container: "iCloud.parity") }
        await attempt { try await store.discoverableUsers(emailAddresses: ["A@EXAMPLE.COM", "nobody@example.com"], recordNames: [], container: "iCloud.parity") }
        await attempt { try await store.discoverableUsers(emailAddresses: ["a@example.com"], recordNames: [aliceName, "_nobody"], container: "iCloud.parity").count }
        await attempt { try await store.discoverableUsers(emailAddresses: [], recordNames: [aliceName], container: "iCloud.parity") }
        await attempt { try await store.discoverableUsers(emailAddresses: [], recordNames: [], container: "iCloud.parity") }
        await attempt { try await store.discoverableUsers(emailAddresses: ["a@example.com"], recordNames: [aliceName], container: "iCloud.test") }
        await attempt { try await store.setDiscoverable(true, userName: "zoe", container: "iCloud.parity") }
        await attempt { try await store.setDiscoverable(true, userName: "alice", container: "iCloud.none") }
        await attempt { try await store.setDiscoverable(false, userName: "alice", container: "iCloud.parity") }
        await attempt { try await store.discoverableUsers(emailAddresses: ["a@example.com"], recordNames: [aliceName], container: "iCloud.parity") }
        try await store.addServerKey(keyID: "k1", container: "iCloud.parity", publicKeyPEM: "PEM")
        await attempt { try await store.serverKey(id: "k1").map { [$0.keyID, $0.container, $0.publicKeyPEM] } as Any }
        await attempt { try await store.revokeServerKey(keyID: "k1") }
        await attempt { try await store.serverKey(id: "k1") as Any }
        await attempt { try await store.listServerKeys(container: nil).map(\.revoked) }
        await attempt { try await store.listContainers() }
        return log
    }

    /// Blanks UUIDs, random hex tokens and session IDs.
    static func normalized(_ text: String) -> String {
        var text = text
        for (pattern, replacement) in [
            ("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<uuid>"),
            ("[0-9a-f]{32,64}", "<hex>"),
            ("s_[0-9a-f]{24}", "<session>"),
        ] {
            text = text.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return text
    }
}
