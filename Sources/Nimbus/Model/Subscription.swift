import NimbusProtocol

/// A standing request for push notifications when data changes: on records matching a
/// query, on anything in a zone, or on anything in the database.
///
/// ```swift
/// let subscription = Subscription(id: "reading-list", kind: .recordZone(readingListZone))
/// try await database.save(subscription)
/// ```
///
/// On the wire it travels as the shared model's `SubscriptionDefinition`.
public struct Subscription: Sendable, Hashable, Identifiable {
    /// A subscription's identity, chosen by the client.
    public typealias ID = String
    /// Record events a query subscription fires on: `create`, `update`, `delete`.
    public typealias QueryEvent = SubscriptionDefinition.FiringEvent
    /// What a push for a subscription shows and carries.
    public typealias NotificationInfo = NimbusProtocol.NotificationInfo

    /// What the subscription watches.
    public enum Kind: Sendable, Hashable {
        /// Records of `query` (in `zoneID`, or in every zone when `nil`); fires on the chosen events.
        case query(Query, zoneID: ZoneID?, firesOn: Set<QueryEvent>, firesOnce: Bool)
        /// Any change in a zone (to records of `recordType` only, when given).
        case recordZone(ZoneID, recordType: String? = nil)
        /// Any change in any zone of the database.
        case database
    }

    public let id: ID
    public var kind: Kind
    /// What the push carries. Defaults to `.silent`: `content-available` only.
    public var notificationInfo: NotificationInfo

    public init(id: ID, kind: Kind, notificationInfo: NotificationInfo = .silent) {
        self.id = id
        self.kind = kind
        self.notificationInfo = notificationInfo
    }

    /// The subscription's identity (CloudKit's name for ``id``).
    public var subscriptionID: ID { id }
}

extension NotificationInfo {
    /// A silent push (`content-available` only): what a sync client wants.
    public static let silent = NotificationInfo(shouldSendContentAvailable: true)
}
