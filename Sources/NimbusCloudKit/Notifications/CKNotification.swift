import Foundation
import Nimbus
import NimbusProtocol

/// Lets `CKNotification(fromRemoteNotificationDictionary:)` return the subclass a payload
/// describes (a ``CKQueryNotification`` for a query subscription's push, …), as CloudKit's
/// factory initializer does: an initializer in a protocol extension may assign `self`.
public protocol CKNotificationFactory {}

/// A push a subscription caused, read from its payload: the base of ``CKQueryNotification``,
/// ``CKRecordZoneNotification`` and ``CKDatabaseNotification``.
///
/// ```swift
/// if let notification = CKNotification(fromRemoteNotificationDictionary: userInfo),
///    let zone = notification as? CKRecordZoneNotification {
///     fetchChanges(in: zone.recordZoneID!)
/// }
/// ```
///
/// Off Apple platforms, ``CKContainer/remoteNotifications()`` delivers the same types from
/// Nimbus's WebSocket push channel.
///
/// Every stored property is a constant, so the class is `Sendable`.
open class CKNotification: NSObject, CKNotificationFactory, @unchecked Sendable {
    // `@unchecked Sendable` only because the class is open: every stored property is a `let`
    // of a `Sendable` type, and subclasses here add only `let`s of `Sendable` types.

    /// What kind of subscription caused the push.
    public enum NotificationType: Int, Sendable, Hashable {
        case query = 1
        case recordZone = 2
        case readNotification = 3
        case database = 4
    }

    /// A notification's identity on the server.
    public final class ID: NSObject, NSCopying, Sendable {
        let rawValue: String

        init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public func copy(with zone: NSZone? = nil) -> Any { self }
        public override func isEqual(_ object: Any?) -> Bool { (object as? ID)?.rawValue == rawValue }
        public override var hash: Int { rawValue.hashValue }
        public override var description: String { rawValue }
    }

    public let notificationType: NotificationType
    public let notificationID: ID?
    public let containerIdentifier: String?
    public let subscriptionOwnerUserRecordID: CKRecord.ID?
    public let subscriptionID: CKSubscription.ID?
    /// Whether the server left parts of the payload out (never, with Nimbus's payloads).
    public let isPruned: Bool
    public let alertBody: String?
    public let title: String?
    public let subtitle: String?
    public let soundName: String?
    public let badge: NSNumber?
    public let category: String?

    init(_ push: PushNotification, type: NotificationType) {
        self.notificationType = type
        self.notificationID = push.notificationID.map(ID.init)
        self.containerIdentifier = push.containerIdentifier
        self.subscriptionOwnerUserRecordID = push.subscriptionOwnerUserRecordName.map { CKRecord.ID(recordName: $0) }
        self.subscriptionID = push.subscriptionID
        self.isPruned = false
        self.alertBody = push.alertBody
        self.title = push.title
        self.subtitle = push.subtitle
        self.soundName = push.soundName
        self.badge = push.badge.map { NSNumber(value: $0) }
        self.category = push.category
    }

    /// The notification for an SDK push.
    static func from(_ push: PushNotification) -> CKNotification {
        switch push.kind {
        case .query: return CKQueryNotification(push)
        case .recordZone: return CKRecordZoneNotification(push)
        case .database: return CKDatabaseNotification(push)
        case .unknown: return CKNotification(push, type: .readNotification)
        }
    }
}

extension CKNotificationFactory where Self: CKNotification {
    /// The notification a push payload describes (its `ck` dictionary), as the subclass for
    /// its subscription's kind; `nil` when the dictionary is not a CloudKit payload.
    public init?(fromRemoteNotificationDictionary notificationDictionary: [AnyHashable: Any]) {
        var strings: [String: Any] = [:]
        for (key, value) in notificationDictionary {
            guard let key = key.base as? String else { continue }
            strings[key] = value
        }
        guard JSONSerialization.isValidJSONObject(strings),
            let data = try? JSONSerialization.data(withJSONObject: strings),
            let push = try? PushNotification(payload: data),
            let notification = CKNotification.from(push) as? Self
        else { return nil }
        self = notification
    }
}

extension CKDatabase.Scope {
    init?(_ scope: Database.Scope?) {
        switch scope {
        case .public?: self = .public
        case .private?: self = .private
        case .shared?: self = .shared
        default: return nil
        }
    }
}

/// A query subscription's push: which record, why, and the fields the subscription asked for.
public final class CKQueryNotification: CKNotification, @unchecked Sendable {
    /// Why the subscription fired.
    public enum Reason: Int, Sendable, Hashable {
        case recordCreated = 1
        case recordUpdated = 2
        case recordDeleted = 3
    }

    public let queryNotificationReason: Reason
    public let recordID: CKRecord.ID?
    public let databaseScope: CKDatabase.Scope
    /// The fields the push carried (the subscription's `desiredKeys`).
    private let fields: [String: FieldValue]
    private let holder: Record.ID

    /// The subscription's `desiredKeys` of the record, as record values.
    public var recordFields: [CKRecord.FieldKey: any CKRecordValueProtocol]? {
        fields.isEmpty ? nil : fields.mapValues { $0.recordValue(heldBy: holder) }
    }

    init(_ push: PushNotification) {
        self.queryNotificationReason = push.queryNotificationReason.flatMap { Reason(rawValue: $0.rawValue) } ?? .recordUpdated
        self.recordID = push.recordID.map(CKRecord.ID.init)
        self.databaseScope = CKDatabase.Scope(push.databaseScope) ?? .private
        self.holder = push.recordID ?? Record.ID(recordName: "_")
        self.fields = push.recordFields
        super.init(push, type: .query)
    }
}

/// A record zone subscription's push: which zone changed.
public final class CKRecordZoneNotification: CKNotification, @unchecked Sendable {
    public let recordZoneID: CKRecordZone.ID?
    public let databaseScope: CKDatabase.Scope

    init(_ push: PushNotification) {
        self.recordZoneID = push.recordZoneID.map(CKRecordZone.ID.init)
        self.databaseScope = CKDatabase.Scope(push.databaseScope) ?? .private
        super.init(push, type: .recordZone)
    }
}

/// A database subscription's push: something changed in the database.
public final class CKDatabaseNotification: CKNotification, @unchecked Sendable {
    public let databaseScope: CKDatabase.Scope

    init(_ push: PushNotification) {
        self.databaseScope = CKDatabase.Scope(push.databaseScope) ?? .private
        super.init(push, type: .database)
    }
}
