import NimbusProtocol
import NimbusStore
import Testing

/// Which subscriptions a commit fires, without a database.
@Suite("SubscriptionDefinition matching")
struct SubscriptionMatcherTests {
    static func row(_ name: String, _ fields: [String: FieldValue] = [:], type: String = "Article", version: Int64 = 1, deleted: Bool = false) -> StoredRecord {
        StoredRecord(
            recordName: name, recordType: type, fieldsJSON: Record.fieldsJSON(fields).serialized(),
            created: RecordStamp(timestamp: 0), modified: RecordStamp(timestamp: 0), version: version,
            createdVersion: 1, deleted: deleted)
    }

    static func stored(_ id: String, _ kind: SubscriptionDefinition.Kind, owner: String = "_alice") -> StoredSubscription {
        StoredSubscription(
            subscription: SubscriptionDefinition(subscriptionID: id, kind: kind), owner: owner, createdAt: 0)
    }

    static let bookmarked = RecordQuery(recordType: "Article", filters: [QueryFilter(field: "bookmarked", .equals, 1)])

    func match(_ event: CommitEvent, _ subscriptions: [StoredSubscription]) -> SubscriptionMatch {
        SubscriptionMatcher.match(event, subscriptions: subscriptions) { ZoneID(zoneName: $0, ownerRecordName: "_alice") }
    }

    @Test func queryEvaluatesBeforeAndAfterEachChange() {
        let query = Self.stored(
            "q", .query(Self.bookmarked, scope: .zone("News"), firesOn: Set(SubscriptionDefinition.FiringEvent.allCases), firesOnce: false))
        let off = Self.row("a", ["bookmarked": 0])
        let on = Self.row("a", ["bookmarked": 1], version: 2)
        let gone = Self.row("a", version: 3, deleted: true)
        func reasons(_ changes: [(StoredRecord?, StoredRecord)]) -> [QueryNotificationReason?] {
            match(.records(zoneName: "News", changes: changes.map { (before: $0.0, after: $0.1) }), [query]).drafts.map(\.reason)
        }
        #expect(reasons([(nil, on)]) == [.recordCreated])
        #expect(reasons([(nil, off)]) == [])
        #expect(reasons([(off, on)]) == [.recordUpdated], "entering the filter is an update")
        #expect(reasons([(on, on)]) == [.recordUpdated])
        #expect(reasons([(on, off)]) == [], "leaving the filter fires nothing, as in CloudKit")
        #expect(reasons([(on, gone)]) == [.recordDeleted])
        #expect(reasons([(off, gone)]) == [])
        #expect(reasons([(Self.row("a", version: 1, deleted: true), on)]) == [.recordCreated], "re-created after a delete")
        // Other zones and other types are not this subscription's business.
        #expect(match(.records(zoneName: "Other", changes: [(nil, on)]), [query]).drafts.isEmpty)
        #expect(match(.records(zoneName: "News", changes: [(nil, Self.row("b", ["bookmarked": 1], type: "Bookmark"))]), [query]).drafts.isEmpty)
    }

    @Test func firesOnLimitsTheEvents() {
        let createOnly = Self.stored(
            "q", .query(Self.bookmarked, scope: .allZones, firesOn: [.create], firesOnce: false))
        let on = Self.row("a", ["bookmarked": 1])
        #expect(match(.records(zoneName: "Any", changes: [(nil, on)]), [createOnly]).drafts.count == 1)
        #expect(match(.records(zoneName: "Any", changes: [(on, on)]), [createOnly]).drafts.isEmpty)
        #expect(match(.records(zoneName: "Any", changes: [(on, Self.row("a", deleted: true))]), [createOnly]).drafts.isEmpty)
    }

    @Test func firesOnceFiresForTheFirstMatchingRecordOnly() {
        let once = Self.stored("q", .query(Self.bookmarked, scope: .allZones, firesOn: [.create], firesOnce: true))
        let result = match(
            .records(zoneName: "Z", changes: [(nil, Self.row("a", ["bookmarked": 0])), (nil, Self.row("b", ["bookmarked": 1])), (nil, Self.row("c", ["bookmarked": 1]))]),
            [once])
        #expect(result.drafts.map(\.recordName) == ["b"])
        #expect(result.firedOnce.map(\.subscription.subscriptionID) == ["q"])
    }

    @Test func zoneAndDatabaseSubscriptionsFireOncePerCommit() {
        let zone = Self.stored("z", .zone(zoneName: "ReadingList", recordType: nil))
        let typed = Self.stored("t", .zone(zoneName: "ReadingList", recordType: "Visit"))
        let database = Self.stored("d", .database)
        let changes = [(before: StoredRecord?.none, after: Self.row("a", type: "Bookmark")), (before: nil, after: Self.row("b", type: "Bookmark"))]
        let result = match(.records(zoneName: "ReadingList", changes: changes), [zone, typed, database])
        #expect(result.drafts.map(\.subscription.subscription.subscriptionID) == ["d", "z"])
        #expect(result.drafts.map(\.kind) == [.database, .recordZone])
        #expect(match(.records(zoneName: "History", changes: changes), [zone]).drafts.isEmpty)

        let zones = match(.zones(created: ["New"], deleted: ["ReadingList"]), [zone, typed, database])
        #expect(zones.drafts.map(\.subscription.subscription.subscriptionID) == ["d", "t", "z"])
        #expect(match(.zones(created: [], deleted: []), [database]).drafts.isEmpty)
    }

    @Test func subscriptionsDecodeAsCloudKitDefinesThem() throws {
        func decode(_ text: String) throws -> SubscriptionDefinition {
            try SubscriptionDefinition(wire: WireReader(try JSON.parse(text), path: "subscription"))
        }
        let zone = try decode(#"{"subscriptionID": "s", "subscriptionType": "zone", "zoneID": {"zoneName": "Z"}}"#)
        #expect(zone.kind == .zone(zoneName: "Z", recordType: nil))
        let query = try decode(#"{"subscriptionID": "q", "subscriptionType": "query", "query": {"recordType": "A"}}"#)
        #expect(query.kind == .query(RecordQuery(recordType: "A"), scope: .zone("_defaultZone"), firesOn: [.create, .update, .delete], firesOnce: false))
        let wide = try decode(#"{"subscriptionID": "q", "subscriptionType": "query", "query": {"recordType": "A"}, "zoneWide": true, "firesOn": ["delete"]}"#)
        #expect(wide.kind == .query(RecordQuery(recordType: "A"), scope: .allZones, firesOn: [.delete], firesOnce: false))
        #expect(try decode(#"{"subscriptionID": "d", "subscriptionType": "database"}"#).kind == .database)

        #expect(throws: CloudKitError.self) {
            try decode(#"{"subscriptionID": "s", "subscriptionType": "zone", "zoneID": {"zoneName": "Z"}, "notificationInfo": {"desiredKeys": ["a"]}}"#)
        }
        #expect(throws: CloudKitError.self) { try decode(#"{"subscriptionID": "s", "subscriptionType": "zone"}"#) }
        #expect(throws: CloudKitError.self) {
            try decode(#"{"subscriptionID": "q", "subscriptionType": "query", "query": {"recordType": "A"}, "firesOn": []}"#)
        }
        #expect(throws: CloudKitError.self) { try decode(#"{"subscriptionID": "x", "subscriptionType": "push"}"#) }
        // What is written decodes to the same subscription.
        for subscription in [zone, query, wide] {
            #expect(try SubscriptionDefinition(wire: WireReader(subscription.wireJSON(zoneOwner: "_alice"))) == subscription)
        }
    }
}

/// The push payload, key by key.
@Suite("Push payload")
struct PushPayloadTests {
    func draft(_ kind: NotificationKind, info: NotificationInfo = NotificationInfo(shouldSendContentAvailable: true), record: Record? = nil) -> NotificationDraft {
        let subscription = StoredSubscription(
            subscription: SubscriptionDefinition(subscriptionID: "sub", kind: .database, notificationInfo: info), owner: "_bob",
            createdAt: 0)
        switch kind {
        case .query:
            return NotificationDraft(
                subscription: subscription, kind: .query, zoneName: "Z", recordName: "r1", reason: .recordUpdated, record: record)
        case .recordZone:
            return NotificationDraft(subscription: subscription, kind: .recordZone, zoneName: "Z")
        case .database:
            return NotificationDraft(subscription: subscription, kind: .database)
        }
    }

    func payload(_ draft: NotificationDraft, scope: DatabaseScope = .private, badge: Int? = nil) -> JSON {
        PushPayload.make(draft, notificationID: "n-1", container: "iCloud.x", scope: scope, zoneOwner: "_owner", badge: badge)
    }

    @Test func theThreeKindsUseApplesShortKeys() {
        let ck: JSON = ["ce": 2, "cid": "iCloud.x", "ckuserid": "_bob", "nid": "n-1"]
        func with(_ key: String, _ body: JSON) -> JSON {
            guard case .object(var members) = ck else { return ck }
            members[key] = body
            return ["aps": ["content-available": 1], "ck": .object(members)]
        }
        #expect(payload(draft(.database)) == with("met", ["dbs": 2, "sid": "sub"]))
        #expect(payload(draft(.recordZone)) == with("fet", ["dbs": 2, "sid": "sub", "zid": "Z", "zoid": "_owner"]))
        #expect(payload(draft(.query), scope: .public) == with("qry", ["dbs": 1, "sid": "sub", "zid": "Z", "zoid": "_owner", "rid": "r1", "fo": 2]))
    }

    @Test func desiredKeysAndLocalizationArgumentsComeFromTheRecord() {
        let record = Record(recordName: "r1", recordType: "T", fields: ["title": "Hi", "n": 7, "other": "x"])
        let info = NotificationInfo(
            alertLocalizationKey: "K", alertLocalizationArgs: ["title", "literal"], title: "T", subtitle: "S",
            desiredKeys: ["title", "n", "absent"])
        let json = payload(draft(.query, info: info, record: record), badge: 3)
        #expect(json["ck"]?["qry"]?["af"] == ["title": "Hi", "n": 7])
        #expect(json["aps"] == ["alert": ["loc-key": "K", "loc-args": ["Hi", "literal"], "title": "T", "subtitle": "S"], "badge": 3])
    }

    @Test func aNotificationThatShowsNothingIsSilent() {
        #expect(payload(draft(.database, info: NotificationInfo()))["aps"] == ["content-available": 1])
        #expect(payload(draft(.database, info: NotificationInfo(soundName: "a")))["aps"] == ["sound": "a"])
    }
}
