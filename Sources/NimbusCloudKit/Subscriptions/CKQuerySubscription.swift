import Foundation
import Nimbus
import NimbusProtocol

/// Pushes when records matching a predicate are created, updated or deleted.
///
/// ```swift
/// let subscription = CKQuerySubscription(
///     recordType: "Note", predicate: NSPredicate(format: "done == NO"), subscriptionID: "open-notes",
///     options: [.firesOnRecordCreation, .firesOnRecordUpdate])
/// try await database.save(subscription)
/// ```
///
/// `@unchecked Sendable`: see ``CKSubscription``.
public final class CKQuerySubscription: CKSubscription, @unchecked Sendable {
    /// When the subscription fires.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let firesOnRecordCreation = Options(rawValue: 1 << 0)
        public static let firesOnRecordUpdate = Options(rawValue: 1 << 1)
        public static let firesOnRecordDeletion = Options(rawValue: 1 << 2)
        /// Fire once, then the server deletes the subscription.
        public static let firesOnce = Options(rawValue: 1 << 3)
    }

    public let recordType: CKRecord.RecordType
    public let predicate: NSPredicate
    public let querySubscriptionOptions: Options
    /// The zone to watch; every zone of the database when `nil`.
    @Protected public var zoneID: CKRecordZone.ID? = nil

    public init(
        recordType: CKRecord.RecordType, predicate: NSPredicate, subscriptionID: CKSubscription.ID, options: Options
    ) {
        self.recordType = recordType
        self.predicate = predicate
        self.querySubscriptionOptions = options
        super.init(subscriptionID: subscriptionID, subscriptionType: .query)
    }

    public convenience init(recordType: CKRecord.RecordType, predicate: NSPredicate, options: Options) {
        self.init(recordType: recordType, predicate: predicate, subscriptionID: UUID().uuidString, options: options)
    }

    override func nimbus() throws(CKError) -> Subscription {
        let query = try CKQuery(recordType: recordType, predicate: predicate).nimbus()
        var events: Set<Subscription.QueryEvent> = []
        if querySubscriptionOptions.contains(.firesOnRecordCreation) { events.insert(.create) }
        if querySubscriptionOptions.contains(.firesOnRecordUpdate) { events.insert(.update) }
        if querySubscriptionOptions.contains(.firesOnRecordDeletion) { events.insert(.delete) }
        guard !events.isEmpty else {
            throw CKError(
                .invalidArguments,
                message: "a query subscription fires on creation, update or deletion: set at least one of those options")
        }
        return Subscription(
            id: subscriptionID,
            kind: .query(query, zoneID: zoneID?.nimbus, firesOn: events, firesOnce: querySubscriptionOptions.contains(.firesOnce)),
            notificationInfo: nimbusNotificationInfo)
    }
}

/// Pushes when anything changes in one zone (of one record type, when ``recordType`` is set).
///
/// `@unchecked Sendable`: see ``CKSubscription``.
public final class CKRecordZoneSubscription: CKSubscription, @unchecked Sendable {
    public let zoneID: CKRecordZone.ID
    @Protected public var recordType: CKRecord.RecordType? = nil

    public init(zoneID: CKRecordZone.ID, subscriptionID: CKSubscription.ID) {
        self.zoneID = zoneID
        super.init(subscriptionID: subscriptionID, subscriptionType: .recordZone)
    }

    public convenience init(zoneID: CKRecordZone.ID) {
        self.init(zoneID: zoneID, subscriptionID: UUID().uuidString)
    }

    override func nimbus() throws(CKError) -> Subscription {
        Subscription(
            id: subscriptionID, kind: .recordZone(zoneID.nimbus, recordType: recordType),
            notificationInfo: nimbusNotificationInfo)
    }
}

/// Pushes when anything changes in any zone of the database (private and shared databases).
///
/// `@unchecked Sendable`: see ``CKSubscription``.
public final class CKDatabaseSubscription: CKSubscription, @unchecked Sendable {
    public init(subscriptionID: CKSubscription.ID) {
        super.init(subscriptionID: subscriptionID, subscriptionType: .database)
    }

    public convenience init() {
        self.init(subscriptionID: UUID().uuidString)
    }

    override func nimbus() throws(CKError) -> Subscription {
        Subscription(id: subscriptionID, kind: .database, notificationInfo: nimbusNotificationInfo)
    }
}
