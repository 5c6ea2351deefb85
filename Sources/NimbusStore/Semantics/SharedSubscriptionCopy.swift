import Foundation
import NimbusProtocol

/// A participant's database subscription of their `shared` database, copied into each
/// owner's private database whose zone is shared with them (a zone subscription owned by
/// the participant), so that a change there fires it in the owner's own commit, as fast as
/// the owner's own subscriptions.
///
/// A copy is the only subscription of a private database whose owner is not the database's
/// owner. Its notifications read as the participant's database notification: the original
/// subscription ID, the `shared` scope, kind database (``StoredNotification/init(draft:database:caller:sequence:unreadBadges:now:)``).
public enum SharedSubscriptionCopy {
    static let marker = "\u{1F}shared\u{1F}"

    /// The copy's subscription ID for the participant's `subscriptionID` and one shared zone.
    public static func copyID(of subscriptionID: String, zone: String) -> String {
        subscriptionID + marker + zone
    }

    /// The participant's subscription ID a copy's ID was made from; `nil` for any other ID.
    public static func originalID(ofCopy copyID: String) -> String? {
        guard let range = copyID.range(of: marker) else { return nil }
        return String(copyID[..<range.lowerBound])
    }

    /// Whether a draft comes from a copy (a subscription of another user in a private database).
    static func isCopy(_ draft: NotificationDraft, in database: DatabaseKey) -> Bool {
        database.scope == .private && draft.subscription.owner != database.owner
    }

    /// The draft as the participant's database notification.
    static func participantDraft(_ draft: NotificationDraft) -> NotificationDraft {
        var copy = draft
        copy.kind = .database
        copy.zoneName = nil
        copy.recordName = nil
        copy.reason = nil
        copy.record = nil
        if let original = originalID(ofCopy: draft.subscription.subscription.subscriptionID) {
            copy.subscription.subscription.subscriptionID = original
        }
        return copy
    }
}
