import NimbusProtocol

/// Whose notification collection: a user in one container environment.
public struct NotificationRecipient: Sendable, Hashable, CustomStringConvertible {
    public var container: String
    public var environment: ContainerEnvironment
    /// The user's record name in the container.
    public var userRecordName: String

    public init(container: String, environment: ContainerEnvironment, userRecordName: String) {
        self.container = container
        self.environment = environment
        self.userRecordName = userRecordName
    }

    public var description: String { "\(container)/\(environment.rawValue)/\(userRecordName)" }
}

/// Which kind of subscription produced a notification (CloudKit's notification types).
public enum NotificationKind: String, Sendable, Hashable, CaseIterable {
    /// A query subscription (`qry` in the push payload).
    case query
    /// A zone subscription (`fet`).
    case recordZone
    /// A database subscription (`met`).
    case database
}

/// Why a query notification fired (`fo` in the push payload).
public enum QueryNotificationReason: Int, Sendable, Hashable, CaseIterable {
    case recordCreated = 1
    case recordUpdated = 2
    case recordDeleted = 3

    /// CloudKit's name of the reason.
    public var name: String {
        switch self {
        case .recordCreated: return "recordCreated"
        case .recordUpdated: return "recordUpdated"
        case .recordDeleted: return "recordDeleted"
        }
    }
}

/// One entry of a user's notification collection.
///
/// The collection is a per-user log: each notification gets the next sequence number of
/// its recipient when it is created (in the transaction of the write that caused it), and
/// again when it is marked read, so that "changes since a token" reports read marks to the
/// user's other devices.
public struct StoredNotification: Sendable, Equatable {
    public var recipient: NotificationRecipient
    /// The position in the recipient's collection (changes when marked read).
    public var sequence: Int64
    /// The position at which the notification was created.
    public var createdSequence: Int64
    /// `nid`: a UUID, unique across the server.
    public var notificationID: String
    public var subscriptionID: String
    public var kind: NotificationKind
    public var scope: DatabaseScope
    public var zoneName: String?
    /// The owner record name of the zone (`zoid`).
    public var zoneOwner: String?
    public var recordName: String?
    public var reason: QueryNotificationReason?
    /// Who made the change: the user and device that are not notified about it.
    public var originUser: String?
    public var originDevice: String?
    /// The push payload in Apple's shape, as JSON text.
    public var payload: String
    public var isRead: Bool
    /// Whether the notification counts toward the badge (`shouldBadge`).
    public var badges: Bool
    /// Milliseconds since the epoch.
    public var createdAt: Int64

    public init(
        recipient: NotificationRecipient, sequence: Int64, createdSequence: Int64, notificationID: String,
        subscriptionID: String, kind: NotificationKind, scope: DatabaseScope, zoneName: String?, zoneOwner: String?,
        recordName: String?, reason: QueryNotificationReason?, originUser: String?, originDevice: String?,
        payload: String, isRead: Bool, badges: Bool, createdAt: Int64
    ) {
        self.recipient = recipient
        self.sequence = sequence
        self.createdSequence = createdSequence
        self.notificationID = notificationID
        self.subscriptionID = subscriptionID
        self.kind = kind
        self.scope = scope
        self.zoneName = zoneName
        self.zoneOwner = zoneOwner
        self.recordName = recordName
        self.reason = reason
        self.originUser = originUser
        self.originDevice = originDevice
        self.payload = payload
        self.isRead = isRead
        self.badges = badges
        self.createdAt = createdAt
    }

    /// Whether this notification is about a change the given device of the recipient made.
    public func originated(byDevice deviceID: String?) -> Bool {
        guard let deviceID, let originDevice else { return false }
        return originDevice == deviceID && originUser == recipient.userRecordName
    }
}

/// A page of a notification collection.
public struct NotificationPage: Sendable {
    /// Notifications created or marked read since the token, in sequence order.
    public var notifications: [StoredNotification]
    public var syncToken: String
    public var moreComing: Bool

    public init(notifications: [StoredNotification], syncToken: String, moreComing: Bool) {
        self.notifications = notifications
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// The outcome of marking one notification read.
public enum MarkReadResult: Sendable, Equatable {
    case marked(notificationID: String)
    case failed(notificationID: String, error: CloudKitError)
}

/// What a device missed while it was away: the latest notification for it and how many there were.
public struct MissedNotifications: Sendable, Equatable {
    /// The most recent notification created for the device since its cursor.
    public var latest: StoredNotification
    /// How many notifications for the device were created since its cursor.
    public var count: Int

    public init(latest: StoredNotification, count: Int) {
        self.latest = latest
        self.count = count
    }
}

/// A web push token (`tokens/create`): its owner and whether it was registered.
public struct PushToken: Sendable, Equatable {
    public var token: String
    public var recipient: NotificationRecipient
    /// `development` or `production`, as the client asked.
    public var apnsEnvironment: String
    public var registered: Bool

    public init(token: String, recipient: NotificationRecipient, apnsEnvironment: String, registered: Bool) {
        self.token = token
        self.recipient = recipient
        self.apnsEnvironment = apnsEnvironment
        self.registered = registered
    }
}
