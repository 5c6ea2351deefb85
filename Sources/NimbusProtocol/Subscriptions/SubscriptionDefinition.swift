/// A standing request for notifications when data changes: on records matching a query, on
/// anything in one zone, or on anything in the database.
///
/// On the wire (CloudKit Web Services' subscription dictionary):
/// ```json
/// {"subscriptionID": "reading-list", "subscriptionType": "zone",
///  "zoneID": {"zoneName": "ReadingList"},
///  "notificationInfo": {"shouldSendContentAvailable": true}}
/// ```
/// `subscriptionType` is `query`, `zone` or (Nimbus extension, CloudKit's database
/// subscription) `database`.
public struct SubscriptionDefinition: Sendable, Hashable {
    /// What a subscription watches.
    public enum Kind: Sendable, Hashable {
        /// Records matching `query` in `scope`; fires on the chosen events.
        case query(RecordQuery, scope: QueryScope, firesOn: Set<FiringEvent>, firesOnce: Bool)
        /// Any change to records in one zone, optionally only records of one type.
        case zone(zoneName: String, recordType: String?)
        /// Any change in any zone of the database, zones created and deleted included.
        case database
    }

    /// Where a query subscription looks.
    public enum QueryScope: Sendable, Hashable {
        /// One zone (`zoneID`); the default zone when a request names neither a zone nor `zoneWide`.
        case zone(String)
        /// Every zone of the database (`zoneWide: true`).
        case allZones
    }

    /// The record events a query subscription fires on (`firesOn`).
    public enum FiringEvent: String, Sendable, Hashable, CaseIterable, Comparable {
        case create
        case update
        case delete

        public static func < (lhs: Self, rhs: Self) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    public var subscriptionID: String
    public var kind: Kind
    public var notificationInfo: NotificationInfo

    public init(subscriptionID: String, kind: Kind, notificationInfo: NotificationInfo = NotificationInfo()) {
        self.subscriptionID = subscriptionID
        self.kind = kind
        self.notificationInfo = notificationInfo
    }

    /// The zone a subscription is bound to, if any.
    public var zoneName: String? {
        switch kind {
        case .query(_, .zone(let name), _, _): return name
        case .zone(let name, _): return name
        default: return nil
        }
    }

    /// The record type a subscription is limited to, if any.
    public var recordType: String? {
        switch kind {
        case .query(let query, _, _, _): return query.recordType
        case .zone(_, let recordType): return recordType
        case .database: return nil
        }
    }

    /// `query`, `zone` or `database`.
    public var typeName: String {
        switch kind {
        case .query: return "query"
        case .zone: return "zone"
        case .database: return "database"
        }
    }
}

/// What a notification shows and carries (CloudKit's `notificationInfo`).
public struct NotificationInfo: Sendable, Hashable {
    public var alertBody: String?
    public var alertLocalizationKey: String?
    /// Arguments for `alertLocalizationKey`. In query notifications each one that names a
    /// field of the record is replaced by that field's value, as CloudKit does.
    public var alertLocalizationArgs: [String]?
    public var alertActionLocalizationKey: String?
    public var alertLaunchImage: String?
    public var title: String?
    public var subtitle: String?
    public var soundName: String?
    /// Sets `aps.badge` to the number of the user's unread badging notifications.
    public var shouldBadge: Bool
    /// Sets `aps.content-available`: a silent push that wakes the app to fetch.
    public var shouldSendContentAvailable: Bool
    /// Fields of the changed record carried in query notifications (`af`). Query
    /// subscriptions only.
    public var desiredKeys: [String]?
    public var category: String?

    public init(
        alertBody: String? = nil, alertLocalizationKey: String? = nil, alertLocalizationArgs: [String]? = nil,
        alertActionLocalizationKey: String? = nil, alertLaunchImage: String? = nil, title: String? = nil,
        subtitle: String? = nil, soundName: String? = nil, shouldBadge: Bool = false,
        shouldSendContentAvailable: Bool = false, desiredKeys: [String]? = nil, category: String? = nil
    ) {
        self.alertBody = alertBody
        self.alertLocalizationKey = alertLocalizationKey
        self.alertLocalizationArgs = alertLocalizationArgs
        self.alertActionLocalizationKey = alertActionLocalizationKey
        self.alertLaunchImage = alertLaunchImage
        self.title = title
        self.subtitle = subtitle
        self.soundName = soundName
        self.shouldBadge = shouldBadge
        self.shouldSendContentAvailable = shouldSendContentAvailable
        self.desiredKeys = desiredKeys
        self.category = category
    }

    /// Whether the notification shows anything (an alert, a sound or a badge).
    public var isVisible: Bool {
        alertBody != nil || alertLocalizationKey != nil || title != nil || subtitle != nil || soundName != nil
            || shouldBadge
    }
}
