import Foundation
import Nimbus
import NimbusProtocol

/// A standing request for pushes when data changes: the base of ``CKQuerySubscription``,
/// ``CKRecordZoneSubscription`` and ``CKDatabaseSubscription``.
///
/// `@unchecked Sendable`: the ID and type are constants, every other stored property is
/// `@Protected` (a lock-guarded box).
open class CKSubscription: NSObject, NSCopying, @unchecked Sendable {
    /// A subscription's identity, chosen by the app.
    public typealias ID = String

    /// What a subscription watches.
    public enum SubscriptionType: Int, Sendable, Hashable {
        case query = 1
        case recordZone = 2
        case database = 3
    }

    public let subscriptionID: ID
    public let subscriptionType: SubscriptionType
    /// What the push shows and carries; `nil` sends a push with nothing to show.
    @Protected public var notificationInfo: NotificationInfo? = nil

    init(subscriptionID: ID, subscriptionType: SubscriptionType) {
        self.subscriptionID = subscriptionID
        self.subscriptionType = subscriptionType
    }

    public func copy(with zone: NSZone? = nil) -> Any { self }

    /// The SDK subscription.
    func nimbus() throws(CKError) -> Subscription {
        throw CKError(.invalidArguments, message: "use CKQuerySubscription, CKRecordZoneSubscription or CKDatabaseSubscription")
    }

    /// The SDK's notification info of this subscription.
    var nimbusNotificationInfo: NimbusProtocol.NotificationInfo {
        notificationInfo?.nimbus ?? NimbusProtocol.NotificationInfo()
    }

    /// The CloudKit subscription for an SDK subscription of a database of `scope`: in the
    /// private database every zone is the current user's, named by
    /// ``CKCurrentUserDefaultName`` as CloudKit names them.
    static func from(_ subscription: Subscription, scope: CKDatabase.Scope) -> CKSubscription {
        func local(_ zoneID: ZoneID) -> CKRecordZone.ID {
            scope == .private ? CKRecordZone.ID(zoneName: zoneID.zoneName) : CKRecordZone.ID(zoneID)
        }
        let result: CKSubscription
        switch subscription.kind {
        case .query(let query, let zoneID, let events, let firesOnce):
            var options: CKQuerySubscription.Options = []
            if events.contains(.create) { options.insert(.firesOnRecordCreation) }
            if events.contains(.update) { options.insert(.firesOnRecordUpdate) }
            if events.contains(.delete) { options.insert(.firesOnRecordDeletion) }
            if firesOnce { options.insert(.firesOnce) }
            let query = CKQuerySubscription(
                recordType: query.recordType, predicate: PredicateRendering.predicate(for: query.filters),
                subscriptionID: subscription.id, options: options)
            query.zoneID = zoneID.map(local)
            result = query
        case .recordZone(let zoneID, let recordType):
            let zone = CKRecordZoneSubscription(zoneID: local(zoneID), subscriptionID: subscription.id)
            zone.recordType = recordType
            result = zone
        case .database:
            result = CKDatabaseSubscription(subscriptionID: subscription.id)
        }
        result.notificationInfo = NotificationInfo(subscription.notificationInfo)
        return result
    }
}

extension CKSubscription {
    /// What a subscription's push shows and carries (CloudKit's `CKSubscription.NotificationInfo`).
    ///
    /// `@unchecked Sendable`: every stored property is `@Protected`.
    public final class NotificationInfo: NSObject, @unchecked Sendable {
        @Protected public var alertBody: String? = nil
        @Protected public var alertLocalizationKey: String? = nil
        @Protected public var alertLocalizationArgs: [CKRecord.FieldKey]? = nil
        @Protected public var alertActionLocalizationKey: String? = nil
        @Protected public var alertLaunchImage: String? = nil
        @Protected public var title: String? = nil
        @Protected public var subtitle: String? = nil
        @Protected public var soundName: String? = nil
        @Protected public var shouldBadge: Bool = false
        @Protected public var shouldSendContentAvailable: Bool = false
        /// Fields of the changed record the push carries (query subscriptions).
        @Protected public var desiredKeys: [CKRecord.FieldKey]? = nil
        @Protected public var category: String? = nil

        public override init() {}

        init(_ info: NimbusProtocol.NotificationInfo) {
            super.init()
            alertBody = info.alertBody
            alertLocalizationKey = info.alertLocalizationKey
            alertLocalizationArgs = info.alertLocalizationArgs
            alertActionLocalizationKey = info.alertActionLocalizationKey
            alertLaunchImage = info.alertLaunchImage
            title = info.title
            subtitle = info.subtitle
            soundName = info.soundName
            shouldBadge = info.shouldBadge
            shouldSendContentAvailable = info.shouldSendContentAvailable
            desiredKeys = info.desiredKeys
            category = info.category
        }

        var nimbus: NimbusProtocol.NotificationInfo {
            NimbusProtocol.NotificationInfo(
                alertBody: alertBody, alertLocalizationKey: alertLocalizationKey,
                alertLocalizationArgs: alertLocalizationArgs, alertActionLocalizationKey: alertActionLocalizationKey,
                alertLaunchImage: alertLaunchImage, title: title, subtitle: subtitle, soundName: soundName,
                shouldBadge: shouldBadge, shouldSendContentAvailable: shouldSendContentAvailable,
                desiredKeys: desiredKeys, category: category)
        }
    }
}
