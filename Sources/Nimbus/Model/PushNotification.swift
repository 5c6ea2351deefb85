import Foundation
import NimbusProtocol

/// A push notification from a subscription, parsed from the Apple-shaped payload the server
/// pushes: `{"aps": {…}, "ck": {"cid", "nid", "ckuserid", "qry" | "fet" | "met": {…}}}`.
///
/// ```swift
/// for await notification in PushClient(container: container).notifications() {
///     if notification.kind == .recordZone, let zoneID = notification.recordZoneID {
///         try await sync(zoneID)
///     }
/// }
/// ```
public struct PushNotification: Sendable, Hashable {
    /// Which kind of subscription fired.
    public enum Kind: String, Sendable, Hashable {
        /// A query subscription (`qry`): a matching record was created, updated or deleted.
        case query
        /// A record zone subscription (`fet`): something changed in a zone.
        case recordZone
        /// A database subscription (`met`): something changed in the database.
        case database
        /// A payload without a `ck` kind Nimbus knows.
        case unknown
    }

    /// Why a query notification fired (`fo`).
    public enum QueryNotificationReason: Int, Sendable, Hashable {
        case recordCreated = 1
        case recordUpdated = 2
        case recordDeleted = 3
    }

    public var kind: Kind
    /// The notification's ID in the user's notification collection (`nid`).
    public var notificationID: String?
    /// The container the change happened in (`cid`).
    public var containerIdentifier: String?
    /// The user record name of the subscription's owner (`ckuserid`).
    public var subscriptionOwnerUserRecordName: String?
    /// The subscription that fired (`sid`).
    public var subscriptionID: Subscription.ID?
    /// The database the change happened in (`dbs`).
    public var databaseScope: Database.Scope?
    /// The zone that changed (`zid`, `zoid`), for query and record zone notifications.
    public var recordZoneID: ZoneID?
    /// The record that changed (`rid`), for query notifications.
    public var recordID: Record.ID?
    /// For query notifications (`fo`).
    public var queryNotificationReason: QueryNotificationReason?
    /// The subscription's desired keys of the changed record (`af`), for query notifications.
    public var recordFields: [String: FieldValue]
    /// `aps.content-available` was set: a silent push.
    public var isContentAvailable: Bool
    public var alertBody: String?
    public var title: String?
    public var subtitle: String?
    public var badge: Int?
    public var soundName: String?
    public var category: String?
    /// Whether the notification was marked read (in the notification collection).
    public var isRead: Bool
    /// When the server created the notification (in the notification collection).
    public var creationDate: Date?
    /// Nimbus extension: on connecting, a device that missed pushes gets the latest one with
    /// the number of pushes it stands for; read the notification collection for the others.
    public var coalescedCount: Int?
    /// Nimbus extension: the trace of the traced write that caused the notification
    /// (`"nimbus": {"traceparent": …}`). A fetch made because of it continues that trace, so
    /// `nimbus trace` shows this device's fetch as a hop of the change.
    public var trace: RequestTrace?

    /// Parses a payload's JSON text.
    public init(payload: Data) throws {
        let json: JSON
        do { json = try JSON.parse(Array(payload)) } catch {
            throw NimbusError(.invalidArguments, "the push payload is not JSON: \(error)")
        }
        try self.init(payload: json)
    }

    /// Parses a payload.
    public init(payload: JSON) throws {
        guard let ck = payload["ck"]?.object else {
            throw NimbusError(.invalidArguments, "the push payload has no \"ck\" dictionary")
        }
        let aps = payload["aps"]?.object ?? [:]
        notificationID = ck["nid"]?.string
        containerIdentifier = ck["cid"]?.string
        subscriptionOwnerUserRecordName = ck["ckuserid"]?.string
        isContentAvailable = aps["content-available"]?.int64 == 1
        badge = aps["badge"]?.int64.map { Int($0) }
        soundName = aps["sound"]?.string
        category = aps["category"]?.string
        switch aps["alert"] {
        case .string(let body)?: alertBody = body
        case .object(let alert)?:
            alertBody = alert["body"]?.string
            title = alert["title"]?.string
            subtitle = alert["subtitle"]?.string
        default: break
        }
        recordFields = [:]
        isRead = false
        coalescedCount = payload["nimbus"]?["coalesced"]?.int64.map { Int($0) }
        trace = payload["nimbus"]?["traceparent"]?.string.flatMap(RequestTrace.init(traceParent:))

        let body: [String: JSON]
        if let query = ck["qry"]?.object {
            kind = .query
            body = query
        } else if let zone = ck["fet"]?.object {
            kind = .recordZone
            body = zone
        } else if let database = ck["met"]?.object {
            kind = .database
            body = database
        } else {
            kind = .unknown
            body = [:]
        }
        subscriptionID = body["sid"]?.string
        databaseScope = body["dbs"]?.int64.flatMap(Database.Scope.init(pushCode:))
        if let zoneName = body["zid"]?.string {
            recordZoneID = ZoneID(zoneName: zoneName, ownerRecordName: body["zoid"]?.string)
        }
        if let recordName = body["rid"]?.string {
            recordID = Record.ID(recordName: recordName, zoneID: recordZoneID ?? .default)
        }
        queryNotificationReason = body["fo"]?.int64.flatMap { QueryNotificationReason(rawValue: Int($0)) }
        for (key, value) in body["af"]?.object ?? [:] {
            if let field = try? FieldValue(wire: WireReader(value, path: "af.\(key)")) { recordFields[key] = field }
        }
    }
}
