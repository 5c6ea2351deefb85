import NimbusProtocol

/// The answers every engine gives alike outside the change feeds (those are ``FeedRules``):
/// the wording and codes live here once, so a client cannot tell the engines apart.
public enum StorageAnswers {
    /// `subscriptions/modify`: a subscription named twice in one request (the first wins).
    public static func repeatedSubscription(_ id: String) -> SubscriptionResult {
        .failed(subscriptionID: id, error: .badRequest("subscription '\(id)' appears more than once in this request"))
    }

    /// `subscriptions/modify`: the failure of saving `subscription` when the zone it names is
    /// not live (`isLive` answers for a zone name); `nil` when it may be saved. The default
    /// zone always exists.
    public static func missingZone(
        of subscription: SubscriptionDefinition, in database: DatabaseKey, isLive: (String) throws -> Bool
    ) rethrows -> SubscriptionResult? {
        guard let zoneName = subscription.zoneName, zoneName != ZoneID.defaultZoneName, !(try isLive(zoneName)) else {
            return nil
        }
        return .failed(
            subscriptionID: subscription.subscriptionID,
            error: CloudKitError(
                .zoneNotFound, "zone '\(zoneName)' does not exist; create it before subscribing to it",
                zoneID: ZoneID(zoneName: zoneName, ownerRecordName: database.owner)))
    }

    /// `subscriptions/modify`: deleting a subscription that does not exist.
    public static func unknownSubscription(_ id: String) -> SubscriptionResult {
        .failed(subscriptionID: id, error: CloudKitError(.notFound, "subscription '\(id)' does not exist"))
    }

    /// `notifications/markRead`: a notification that is not the recipient's.
    public static func unknownNotification(_ id: String) -> MarkReadResult {
        .failed(
            notificationID: id,
            error: CloudKitError(.notFound, "notification '\(id)' is not in this user's notification collection"))
    }

    /// Completing an upload whose URL was used already or expired.
    public static let spentUpload = CloudKitError(
        .badRequest, "the upload URL was already used or has expired; ask assets/upload for a new one")

    /// A container environment's stored schema, parsed; a document that no longer parses is
    /// the server's fault (INTERNAL_ERROR), never the caller's.
    public static func storedSchema(_ document: String, container: String, environment: ContainerEnvironment)
        throws(CloudKitError) -> ContainerSchema
    {
        do {
            return try SchemaFile.parse(document)
        } catch {
            throw CloudKitError(
                .internalError, "the stored schema of \(container)/\(environment.rawValue) is corrupt: \(error.reason)")
        }
    }
}

extension NotificationPage {
    /// A page of a recipient's notification collection from what an engine read: the token
    /// checked (``FeedRules/checkNotificationToken(since:given:last:horizon:)``), the page cut
    /// (``FeedPaging``) and its token made.
    ///
    /// - Parameters:
    ///   - notifications: the recipient's notifications after `since`, in sequence order,
    ///     read with ``FeedPaging/readLimit(_:)``.
    ///   - last: the recipient's last sequence number; `horizon`: compacted up to it.
    public static func cut(
        _ notifications: [StoredNotification], limit: Int, since: Int64, tokenGiven: Bool, last: Int64, horizon: Int64,
        tokens: ChangeTokens, for recipient: NotificationRecipient
    ) throws(CloudKitError) -> NotificationPage {
        try FeedRules.checkNotificationToken(since: since, given: tokenGiven, last: last, horizon: horizon)
        let page = FeedPaging.cut(notifications, limit: limit, since: since, head: last, position: \.sequence)
        return NotificationPage(
            notifications: page.entries, syncToken: tokens.notifications(sequence: page.tokenPosition, for: recipient),
            moreComing: page.moreComing)
    }
}
