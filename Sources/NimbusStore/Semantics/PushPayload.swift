import NimbusProtocol

/// Builds the push payload of a notification in the shape CloudKit pushes through APNs, so
/// that code written for CloudKit's `userInfo` reads Nimbus pushes unchanged:
///
/// ```json
/// {"aps": {"content-available": 1},
///  "ck": {"ce": 2, "cid": "iCloud.com.example.news", "ckuserid": "_4b2…", "nid": "6f1c…",
///         "fet": {"dbs": 2, "sid": "reading-list", "zid": "ReadingList", "zoid": "_4b2…"}}}
/// ```
///
/// The kind key is `qry` for query notifications (`{dbs, fo, rid, sid, zid, zoid, af}`),
/// `fet` for zone notifications (`{dbs, sid, zid, zoid}`) and `met` for database
/// notifications (`{dbs, sid}`). `dbs` is the database scope (1 public, 2 private, 3
/// shared), `fo` the reason (1 created, 2 updated, 3 deleted), `af` the values of the
/// subscription's `desiredKeys`. `ce` is the constant 2 that CloudKit's payloads carry.
///
/// Like CloudKit, which keeps payloads under the APNs limit, Nimbus keeps each payload within
/// ``maxBytes``: it drops `af` first (marking the payload `"nimbus": {"pruned": true}`), then
/// shortens the alert texts. The client fetches the record for the full data.
public enum PushPayload {
    /// The largest payload, in bytes of JSON (APNs' limit for a notification).
    public static let maxBytes = 4096

    /// The payload of a notification.
    /// - Parameters:
    ///   - zoneOwner: the owner record name of the database's zones (`zoid`).
    ///   - badge: the badge number, for subscriptions with `shouldBadge`.
    ///   - traceParent: the W3C `traceparent` of the traced write that made the notification,
    ///     as the Nimbus extension `"nimbus": {"traceparent": …}` (CloudKit clients ignore it).
    public static func make(
        _ draft: NotificationDraft, notificationID: String, container: String, scope: DatabaseScope,
        zoneOwner: String, badge: Int?, traceParent: String? = nil
    ) -> JSON {
        let subscription = draft.subscription.subscription
        let info = subscription.notificationInfo
        var ck: [String: JSON] = [
            "ce": 2,
            "cid": .string(container),
            "ckuserid": .string(draft.subscription.owner),
            "nid": .string(notificationID),
        ]
        var body: [String: JSON] = ["dbs": .int(scope.pushCode), "sid": .string(subscription.subscriptionID)]
        switch draft.kind {
        case .query:
            if let zoneName = draft.zoneName {
                body["zid"] = .string(zoneName)
                body["zoid"] = .string(zoneOwner)
            }
            if let recordName = draft.recordName { body["rid"] = .string(recordName) }
            if let reason = draft.reason { body["fo"] = .int(reason.rawValue) }
            if let keys = info.desiredKeys, !keys.isEmpty, let record = draft.record {
                var fields: [String: JSON] = [:]
                for key in keys {
                    if let value = record.fields[key] { fields[key] = value.wireValue() }
                }
                body["af"] = .object(fields)
            }
            ck["qry"] = .object(body)
        case .recordZone:
            if let zoneName = draft.zoneName {
                body["zid"] = .string(zoneName)
                body["zoid"] = .string(zoneOwner)
            }
            ck["fet"] = .object(body)
        case .database:
            ck["met"] = .object(body)
        }
        var payload: [String: JSON] = ["aps": .object(aps(info, record: draft.record, badge: badge)), "ck": .object(ck)]
        var nimbus: [String: JSON] = [:]
        if let traceParent { nimbus["traceparent"] = .string(traceParent) }
        if !nimbus.isEmpty { payload["nimbus"] = .object(nimbus) }
        guard JSON.object(payload).serializedBytes().count > maxBytes else { return .object(payload) }
        if case .object(var query)? = ck["qry"], query["af"] != nil {
            query["af"] = nil
            ck["qry"] = .object(query)
            payload["ck"] = .object(ck)
            nimbus["pruned"] = true
            payload["nimbus"] = .object(nimbus)
        }
        if JSON.object(payload).serializedBytes().count > maxBytes, case .object(var aps)? = payload["aps"],
            case .object(var alert)? = aps["alert"]
        {
            for (key, value) in alert {
                if case .string(let text) = value, text.utf8.count > 256 { alert[key] = .string(String(text.prefix(256))) }
                if case .array(let texts) = value { alert[key] = .array(texts.prefix(8).map(Self.shortened)) }
            }
            aps["alert"] = .object(alert)
            payload["aps"] = .object(aps)
            nimbus["pruned"] = true
            payload["nimbus"] = .object(nimbus)
        }
        return .object(payload)
    }

    private static func shortened(_ value: JSON) -> JSON {
        guard case .string(let text) = value, text.utf8.count > 64 else { return value }
        return .string(String(text.prefix(64)))
    }

    /// The `aps` dictionary. A notification that would show nothing (no alert, sound or
    /// badge) is sent as a silent push, so every notification wakes the app.
    static func aps(_ info: NotificationInfo, record: Record?, badge: Int?) -> [String: JSON] {
        var aps: [String: JSON] = [:]
        if info.shouldSendContentAvailable || !info.isVisible { aps["content-available"] = 1 }
        var alert: [String: JSON] = [:]
        if let body = info.alertBody { alert["body"] = .string(body) }
        if let key = info.alertLocalizationKey { alert["loc-key"] = .string(key) }
        if let args = info.alertLocalizationArgs {
            alert["loc-args"] = .array(args.map { .string(localizationArgument($0, record: record)) })
        }
        if let key = info.alertActionLocalizationKey { alert["action-loc-key"] = .string(key) }
        if let image = info.alertLaunchImage { alert["launch-image"] = .string(image) }
        if let title = info.title { alert["title"] = .string(title) }
        if let subtitle = info.subtitle { alert["subtitle"] = .string(subtitle) }
        if !alert.isEmpty { aps["alert"] = .object(alert) }
        if let sound = info.soundName { aps["sound"] = .string(sound) }
        if let badge { aps["badge"] = .int(badge) }
        if let category = info.category { aps["category"] = .string(category) }
        return aps
    }

    /// A localization argument: the value of the record's field of that name, else the text.
    static func localizationArgument(_ argument: String, record: Record?) -> String {
        guard let value = record?.fields[argument] else { return argument }
        switch value {
        case .string(let text): return text
        case .int64(let number), .timestamp(let number, _): return String(number)
        case .double(let number): return "\(number)"
        case .reference(let reference): return reference.recordName
        default: return value.wireValue().serialized()
        }
    }
}
