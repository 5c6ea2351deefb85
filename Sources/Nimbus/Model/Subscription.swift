import NimbusProtocol

/// A standing request for push notifications when data changes: on records matching a
/// query, on anything in a zone, or on anything in the database.
///
/// ```swift
/// let subscription = Subscription(id: "reading-list", kind: .recordZone(readingListZone),
///                                 notificationInfo: .silent)
/// try await database.save(subscription)
/// ```
public struct Subscription: Sendable, Hashable, Identifiable {
    /// A subscription's identity, chosen by the client.
    public typealias ID = String

    /// What the subscription watches.
    public enum Kind: Sendable, Hashable {
        /// Records of `query` (in `zoneID`, or zone-wide when `nil`); fires on the chosen events.
        case query(Query, zoneID: ZoneID?, firesOn: Set<QueryEvent>, firesOnce: Bool)
        /// Any change in a zone.
        case recordZone(ZoneID)
        /// Any change in any zone of the database.
        case database
    }

    /// Record events a query subscription fires on.
    public enum QueryEvent: String, Sendable, Hashable, CaseIterable {
        case create
        case update
        case delete
    }

    public let id: ID
    public var kind: Kind
    /// What the push carries; ``NotificationInfo/silent`` when `nil`.
    public var notificationInfo: NotificationInfo?

    public init(id: ID, kind: Kind, notificationInfo: NotificationInfo? = .silent) {
        self.id = id
        self.kind = kind
        self.notificationInfo = notificationInfo
    }

    /// The subscription's identity (CloudKit's name for ``id``).
    public var subscriptionID: ID { id }

    /// What a push for a subscription shows and carries.
    public struct NotificationInfo: Sendable, Hashable {
        public var alertBody: String?
        public var alertLocalizationKey: String?
        public var alertLocalizationArgs: [String]?
        public var title: String?
        public var subtitle: String?
        public var soundName: String?
        public var shouldBadge: Bool
        /// Sets `content-available`, so the app is woken to fetch (silent push).
        public var shouldSendContentAvailable: Bool
        /// Fields of the changed record to include in a query notification.
        public var desiredKeys: [String]?
        public var category: String?

        public init(
            alertBody: String? = nil, alertLocalizationKey: String? = nil, alertLocalizationArgs: [String]? = nil,
            title: String? = nil, subtitle: String? = nil, soundName: String? = nil, shouldBadge: Bool = false,
            shouldSendContentAvailable: Bool = true, desiredKeys: [String]? = nil, category: String? = nil
        ) {
            self.alertBody = alertBody
            self.alertLocalizationKey = alertLocalizationKey
            self.alertLocalizationArgs = alertLocalizationArgs
            self.title = title
            self.subtitle = subtitle
            self.soundName = soundName
            self.shouldBadge = shouldBadge
            self.shouldSendContentAvailable = shouldSendContentAvailable
            self.desiredKeys = desiredKeys
            self.category = category
        }

        /// A silent push (`content-available` only), what a sync engine wants.
        public static let silent = NotificationInfo()
    }
}
