import NimbusProtocol

/// Subscriptions, the per-user notification collection, device cursors and web push tokens.
///
/// Notifications are never written through this protocol: an engine creates them inside
/// the transaction of the write that causes them (``RecordStore/modifyRecords(_:zone:atomic:policy:caller:in:)``
/// and ``RecordStore/modifyZones(_:caller:in:)``), matching the database's subscriptions
/// with ``SubscriptionMatcher``, so a committed change can never lose its notification.
/// The committed notifications come back in ``CommitSummary/notifications`` and
/// ``ZoneModifyOutcome/notifications`` for the push hub to deliver.
public protocol NotificationStore: Sendable {
    /// Applies `subscriptions/modify` for `owner` in one transaction. Saving replaces a
    /// subscription with the same ID; a zone-bound subscription needs its zone to exist.
    func modifySubscriptions(_ operations: [SubscriptionOperation], owner: String, in database: DatabaseKey)
        async throws -> [SubscriptionResult]

    /// The owner's subscriptions in a database, by subscription ID.
    func listSubscriptions(owner: String, in database: DatabaseKey) async throws -> [SubscriptionDefinition]

    /// Subscriptions by ID, in the order asked; `nil` for a missing one.
    func lookupSubscriptions(_ ids: [String], owner: String, in database: DatabaseKey) async throws
        -> [SubscriptionDefinition?]

    /// The recipient's notifications created or marked read since `token` (from the start
    /// when `nil`), in order.
    func notificationChanges(for recipient: NotificationRecipient, since token: String?, limit: Int) async throws
        -> NotificationPage

    /// Marks notifications read; each one marked moves to the end of the collection so the
    /// user's other devices see the mark in their next `notificationChanges`.
    func markNotificationsRead(_ ids: [String], for recipient: NotificationRecipient) async throws -> [MarkReadResult]

    /// A device (re)connects: returns what it missed since its cursor (`nil` for a device
    /// never seen, or one that missed nothing) and moves its cursor to the present.
    func catchUp(device: String, for recipient: NotificationRecipient, now: Int64) async throws
        -> MissedNotifications?

    /// A device disconnects having been sent every notification up to `sequence`.
    func disconnect(device: String, for recipient: NotificationRecipient, deliveredThrough sequence: Int64, now: Int64)
        async throws

    /// Issues a web push token for the recipient (`tokens/create`).
    func createPushToken(for recipient: NotificationRecipient, apnsEnvironment: String, now: Int64) async throws
        -> PushToken

    /// Registers a token ``createPushToken(for:apnsEnvironment:now:)`` issued to the recipient
    /// (`tokens/register`); its courier delivers from now on. A token never issued is
    /// BAD_REQUEST, one issued to another user ACCESS_DENIED (``PushTokenRules``).
    func registerPushToken(_ token: String, for recipient: NotificationRecipient, apnsEnvironment: String, now: Int64)
        async throws -> PushToken

    /// A token by value.
    func pushToken(_ token: String) async throws -> PushToken?

    /// Removes notifications older than the retention window (a collection token from
    /// before them is expired), and device cursors and tokens unused for as long.
    func compactNotifications(retentionMillis: Int64, now: Int64) async throws -> Int
}
