import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// Inside a write transaction: matches the subscriptions the commit may fire, deletes the
    /// `firesOnce` ones that fired, inserts the notifications (numbered per recipient) and
    /// announces them to the other nodes with `pg_notify`, all before the commit, so a change,
    /// its notifications and their announcement are committed together or not at all.
    ///
    /// Sequence numbers are allocated by one upsert of the recipients' rows in a fixed
    /// (byte) order: the row locks serialise the commits that notify one user, so a
    /// collection reader never skips a notification, and two commits that notify the same
    /// users cannot deadlock.
    func createNotifications(
        _ transaction: Transaction, database key: DatabaseKey, databaseID: Int64, event: CommitEvent,
        subscriptions: [StoredSubscription], caller: Caller?, now: Int64
    ) async throws -> [StoredNotification] {
        guard !subscriptions.isEmpty else { return [] }
        let match = SubscriptionMatcher.match(event, subscriptions: subscriptions) { zoneName in
            ZoneID(zoneName: zoneName, ownerRecordName: key.owner)
        }
        guard !match.drafts.isEmpty else { return [] }

        var counts: [String: Int64] = [:]
        for draft in match.drafts { counts[draft.subscription.owner, default: 0] += 1 }
        let recipients = counts.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var nextSequence: [String: Int64] = [:]
        for row in try await transaction.rows(
            """
            INSERT INTO notification_users (container, environment, recipient, last_seq)
            SELECT \(key.container), \(key.environment.rawValue), t.recipient, t.count
            FROM unnest(\(recipients)::text[], \(recipients.map { counts[$0] ?? 0 })::int8[]) AS t(recipient, count)
            ORDER BY t.recipient
            ON CONFLICT (container, environment, recipient)
                DO UPDATE SET last_seq = notification_users.last_seq + EXCLUDED.last_seq
            RETURNING recipient, last_seq
            """)
        {
            let (recipient, last) = try row.decode((String, Int64).self)
            nextSequence[recipient] = last - (counts[recipient] ?? 0) + 1
        }

        // Badges count the unread badging notifications, read after the lock above.
        let badging = Set(
            match.drafts.filter { $0.subscription.subscription.notificationInfo.shouldBadge }.map(\.subscription.owner))
        var unread: [String: Int] = [:]
        if !badging.isEmpty {
            for row in try await transaction.rows(
                """
                SELECT recipient, count(*) FROM notifications
                WHERE container = \(key.container) AND environment = \(key.environment.rawValue)
                  AND recipient = ANY(\(Array(badging))) AND NOT is_read AND badges
                GROUP BY recipient
                """)
            {
                let (recipient, count) = try row.decode((String, Int64).self)
                unread[recipient] = Int(count)
            }
        }

        var notifications: [StoredNotification] = []
        notifications.reserveCapacity(match.drafts.count)
        for draft in match.drafts {
            let recipient = draft.subscription.owner
            let sequence = nextSequence[recipient] ?? 1
            nextSequence[recipient] = sequence + 1
            let badges = draft.subscription.subscription.notificationInfo.shouldBadge
            notifications.append(
                StoredNotification(
                    draft: draft, database: key, caller: caller, sequence: sequence,
                    unreadBadges: badges ? unread[recipient, default: 0] : 0, now: now))
            if badges { unread[recipient, default: 0] += 1 }
        }
        let messages = try RemoteNotificationMessage.encode(notifications, node: nodeID)
        try await transaction.rows(
            """
            WITH fired AS (
                DELETE FROM subscriptions WHERE db = \(databaseID) AND (owner, id) IN (
                    SELECT * FROM unnest(
                        \(match.firedOnce.map(\.owner))::text[],
                        \(match.firedOnce.map(\.subscription.subscriptionID))::text[]))),
            inserted AS (
                INSERT INTO notifications (container, environment, recipient, seq, created_seq, id, subscription, kind,
                    scope, zone, zone_owner, record_name, reason, origin_user, origin_device, payload, is_read, badges,
                    created_at)
                SELECT \(key.container), \(key.environment.rawValue), t.recipient, t.seq, t.seq, t.id, t.subscription,
                    t.kind, t.scope, t.zone, t.zone_owner, t.record_name, t.reason, \(caller?.userRecordName),
                    \(caller?.deviceID), t.payload, false, t.badges, \(now)
                FROM unnest(
                    \(notifications.map(\.recipient.userRecordName))::text[], \(notifications.map(\.sequence))::int8[],
                    \(notifications.map(\.notificationID))::text[], \(notifications.map(\.subscriptionID))::text[],
                    \(notifications.map(\.kind.rawValue))::text[], \(notifications.map(\.scope.rawValue))::text[],
                    \(NullableArray(notifications.map(\.zoneName)))::text[],
                    \(NullableArray(notifications.map(\.zoneOwner)))::text[],
                    \(NullableArray(notifications.map(\.recordName)))::text[],
                    \(NullableArray(notifications.map { $0.reason.map { Int32($0.rawValue) } }))::int4[],
                    \(notifications.map(\.payload))::text[], \(notifications.map(\.badges))::bool[]
                ) AS t(recipient, seq, id, subscription, kind, scope, zone, zone_owner, record_name, reason, payload, badges))
            SELECT pg_notify(\(channel), message) FROM unnest(\(messages)::text[]) AS message
            """)
        return notifications
    }

    /// The collection since a token, in one statement (one snapshot): the notifications and
    /// the recipient's last sequence number the token is made of agree.
    public func notificationChanges(for recipient: NotificationRecipient, since token: String?, limit: Int)
        async throws -> NotificationPage
    {
        let tokens = try changeTokens
        let since = try token.map { token throws(CloudKitError) in
            try tokens.decodeNotifications(token, for: recipient)
        } ?? 0
        // A page holds at least one entry (a limit below 1 is the caller's mistake, not a crash).
        let limit = max(1, limit)
        let rows = try await rows(
            """
            SELECT u.last_seq, u.horizon, \(unescaped: Self.notificationColumnsN)
            FROM (SELECT 1) AS one
            LEFT JOIN notification_users u ON \(recipient: recipient, qualifiedBy: "u")
            LEFT JOIN LATERAL (
                SELECT * FROM notifications WHERE \(recipient: recipient, qualifiedBy: nil) AND seq > \(since)
                ORDER BY seq LIMIT \(Int64(FeedPaging.readLimit(limit)))
            ) n ON true
            ORDER BY n.seq
            """)
        var last: Int64 = 0
        var horizon: Int64 = 0
        var notifications: [StoredNotification] = []
        for row in rows {
            var columns = ColumnReader(row)
            last = try columns.next(Int64?.self) ?? 0
            horizon = try columns.next(Int64?.self) ?? 0
            if let notification = try columns.optionalNotification() { notifications.append(notification) }
        }
        return try NotificationPage.cut(
            notifications, limit: limit, since: since, tokenGiven: token != nil, last: last, horizon: horizon,
            tokens: tokens, for: recipient)
    }

    /// Each notification marked read gets the recipient's next sequence number, allocated
    /// under the recipient's row lock like a new notification's.
    public func markNotificationsRead(_ ids: [String], for recipient: NotificationRecipient) async throws
        -> [MarkReadResult]
    {
        try await transaction { transaction in
            let last = try await transaction.rows(
                "SELECT last_seq FROM notification_users WHERE \(recipient: recipient, qualifiedBy: nil) FOR UPDATE"
            ).first.map { try $0.decode(Int64.self) }
            var isRead: [String: Bool] = [:]
            if last != nil {
                for row in try await transaction.rows(
                    """
                    SELECT id, is_read FROM notifications
                    WHERE id = ANY(\(ids)) AND \(recipient: recipient, qualifiedBy: nil)
                    """)
                {
                    let (id, read) = try row.decode((String, Bool).self)
                    isRead[id] = read
                }
            }
            var sequence = last ?? 0
            var marked: [String] = []
            var sequences: [Int64] = []
            let results = ids.map { id -> MarkReadResult in
                guard let read = isRead[id] else { return StorageAnswers.unknownNotification(id) }
                if !read {
                    sequence += 1
                    isRead[id] = true
                    marked.append(id)
                    sequences.append(sequence)
                }
                return .marked(notificationID: id)
            }
            guard !marked.isEmpty else {
                transaction.rollbackOnly = true
                return results
            }
            try await transaction.rows(
                """
                WITH last AS (
                    UPDATE notification_users SET last_seq = \(sequence)
                    WHERE \(recipient: recipient, qualifiedBy: nil))
                UPDATE notifications n SET is_read = true, seq = t.seq
                FROM unnest(\(marked)::text[], \(sequences)::int8[]) AS t(id, seq)
                WHERE n.id = t.id
                """)
            return results
        }
    }
}

extension PostgresStore {
    /// The columns of a notification row, in the order ``ColumnReader/notification()`` reads them.
    static let notificationColumns = """
        container, environment, recipient, seq, created_seq, id, subscription, kind, scope, zone, zone_owner,
        record_name, reason, origin_user, origin_device, payload, is_read, badges, created_at
        """
    /// ``notificationColumns`` of a table aliased `n`.
    static let notificationColumnsN = qualified(notificationColumns, by: "n")
}

extension ColumnReader {
    /// A notification from ``PostgresStore/notificationColumns``.
    mutating func notification() throws -> StoredNotification {
        let recipient = NotificationRecipient(
            container: try next(), environment: ContainerEnvironment(rawValue: try next()) ?? .development,
            userRecordName: try next())
        return StoredNotification(
            recipient: recipient, sequence: try next(), createdSequence: try next(), notificationID: try next(),
            subscriptionID: try next(), kind: NotificationKind(rawValue: try next()) ?? .database,
            scope: DatabaseScope(rawValue: try next()) ?? .private, zoneName: try next(), zoneOwner: try next(),
            recordName: try next(), reason: try next(Int32?.self).flatMap { QueryNotificationReason(rawValue: Int($0)) },
            originUser: try next(), originDevice: try next(), payload: try next(), isRead: try next(),
            badges: try next(), createdAt: try next())
    }

    /// A notification of an outer join, `nil` when absent.
    mutating func optionalNotification() throws -> StoredNotification? {
        try unlessNull(columns: 19) { try $0.notification() }
    }
}

extension PostgresQuery.StringInterpolation {
    /// `container = $n AND environment = $n+1 AND recipient = $n+2`: one recipient's rows.
    mutating func appendInterpolation(recipient: NotificationRecipient, qualifiedBy alias: String?) {
        appendInterpolation(
            equal: [
                ("container", recipient.container), ("environment", recipient.environment.rawValue),
                ("recipient", recipient.userRecordName),
            ], qualifiedBy: alias)
    }
}
