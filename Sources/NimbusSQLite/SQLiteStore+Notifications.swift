import Foundation
import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore {
    /// Inside a write transaction: matches the database's subscriptions against what the
    /// transaction changed, deletes the `firesOnce` subscriptions that fired, and inserts
    /// the notifications (sequence-numbered per recipient). Runs before the commit, so a
    /// change and its notifications are committed together or not at all.
    static func recordNotifications(
        _ db: Database, database key: DatabaseKey, databaseID: Int64, event: CommitEvent, caller: Caller?, now: Int64
    ) throws -> [StoredNotification] {
        let subscriptions = try candidateSubscriptions(db, databaseID: databaseID, event: event)
        guard !subscriptions.isEmpty else { return [] }
        let match = SubscriptionMatcher.match(event, subscriptions: subscriptions) { zoneName in
            ZoneID(zoneName: zoneName, ownerRecordName: key.owner)
        }
        for used in match.firedOnce {
            try db.cachedStatement(sql: "DELETE FROM subscriptions WHERE db = ? AND owner = ? AND id = ?")
                .execute(arguments: [databaseID, used.owner, used.subscription.subscriptionID])
        }
        var notifications: [StoredNotification] = []
        notifications.reserveCapacity(match.drafts.count)
        for draft in match.drafts {
            let recipient = NotificationRecipient(
                container: key.container, environment: key.environment, userRecordName: draft.subscription.owner)
            let sequence = try nextSequence(db, recipient)
            let badges = draft.subscription.subscription.notificationInfo.shouldBadge
            let notification = StoredNotification(
                draft: draft, database: key, caller: caller, sequence: sequence,
                unreadBadges: badges ? try unreadBadgeCount(db, recipient) : 0, now: now)
            try insert(db, notification)
            notifications.append(notification)
        }
        return notifications
    }

    /// Allocates the recipient's next sequence number.
    static func nextSequence(_ db: Database, _ recipient: NotificationRecipient) throws -> Int64 {
        try db.cachedStatement(
            sql: """
                INSERT INTO notification_users (container, environment, user, last_seq) VALUES (?, ?, ?, 1)
                ON CONFLICT (container, environment, user) DO UPDATE SET last_seq = last_seq + 1
                """
        ).execute(arguments: recipient.arguments)
        return try lastSequence(db, recipient)
    }

    static func lastSequence(_ db: Database, _ recipient: NotificationRecipient) throws -> Int64 {
        try Int64.fetchOne(
            db.cachedStatement(
                sql: "SELECT last_seq FROM notification_users WHERE container = ? AND environment = ? AND user = ?"),
            arguments: recipient.arguments) ?? 0
    }

    static func unreadBadgeCount(_ db: Database, _ recipient: NotificationRecipient) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT COUNT(*) FROM notifications
                    WHERE container = ? AND environment = ? AND user = ? AND is_read = 0 AND badges = 1
                    """),
            arguments: recipient.arguments) ?? 0
    }

    static func insert(_ db: Database, _ notification: StoredNotification) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO notifications (container, environment, user, seq, created_seq, id, subscription, kind, scope,
                    zone, zone_owner, record_name, reason, origin_user, origin_device, payload, is_read, badges, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            notification.recipient.container, notification.recipient.environment.rawValue,
            notification.recipient.userRecordName, notification.sequence, notification.createdSequence,
            notification.notificationID, notification.subscriptionID, notification.kind.rawValue,
            notification.scope.rawValue, notification.zoneName, notification.zoneOwner, notification.recordName,
            notification.reason?.rawValue, notification.originUser, notification.originDevice, notification.payload,
            notification.isRead, notification.badges, notification.createdAt,
        ])
    }

    static let notificationColumns = """
        container, environment, user, seq, created_seq, id, subscription, kind, scope, zone, zone_owner, record_name,
        reason, origin_user, origin_device, payload, is_read, badges, created_at
        """

    static func storedNotification(_ row: Row) -> StoredNotification {
        StoredNotification(
            recipient: NotificationRecipient(
                container: row[0], environment: ContainerEnvironment(rawValue: row[1]) ?? .development,
                userRecordName: row[2]),
            sequence: row[3], createdSequence: row[4], notificationID: row[5], subscriptionID: row[6],
            kind: NotificationKind(rawValue: row[7]) ?? .database, scope: DatabaseScope(rawValue: row[8]) ?? .private,
            zoneName: row[9], zoneOwner: row[10], recordName: row[11],
            reason: (row[12] as Int?).flatMap(QueryNotificationReason.init(rawValue:)), originUser: row[13],
            originDevice: row[14], payload: row[15], isRead: row[16], badges: row[17], createdAt: row[18])
    }
}

extension SQLiteStore {
    public func notificationChanges(for recipient: NotificationRecipient, since token: String?, limit: Int)
        async throws -> NotificationPage
    {
        let tokens = changeTokens
        let since = try token.map { token throws(CloudKitError) in
            try tokens.decodeNotifications(token, for: recipient)
        } ?? 0
        return try await pool.read { db in
            let state = try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT last_seq, horizon FROM notification_users WHERE container = ? AND environment = ? AND user = ?"),
                arguments: recipient.arguments)
            let last: Int64 = state?[0] ?? 0
            let horizon: Int64 = state?[1] ?? 0
            // Checked before the read: a token the feed cannot answer costs no read.
            try FeedRules.checkNotificationToken(since: since, given: token != nil, last: last, horizon: horizon)
            let notifications = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.notificationColumns) FROM notifications
                        WHERE container = ? AND environment = ? AND user = ? AND seq > ? ORDER BY seq LIMIT ?
                        """),
                arguments: recipient.arguments + [since, FeedPaging.readLimit(limit)]
            ).map(Self.storedNotification)
            return try NotificationPage.cut(
                notifications, limit: limit, since: since, tokenGiven: token != nil, last: last, horizon: horizon,
                tokens: tokens, for: recipient)
        }
    }

    public func markNotificationsRead(_ ids: [String], for recipient: NotificationRecipient) async throws
        -> [MarkReadResult]
    {
        try await pool.write { db in
            try ids.map { id in
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: "SELECT is_read FROM notifications WHERE id = ? AND container = ? AND environment = ? AND user = ?"),
                    arguments: [id] + recipient.arguments)
                guard let row else { return StorageAnswers.unknownNotification(id) }
                if !(row[0] as Bool) {
                    let sequence = try Self.nextSequence(db, recipient)
                    try db.cachedStatement(sql: "UPDATE notifications SET is_read = 1, seq = ? WHERE id = ?")
                        .execute(arguments: [sequence, id])
                }
                return .marked(notificationID: id)
            }
        }
    }

    public func catchUp(device: String, for recipient: NotificationRecipient, now: Int64) async throws
        -> MissedNotifications?
    {
        try await pool.write { db in
            let last = try Self.lastSequence(db, recipient)
            let cursor = try Int64.fetchOne(
                db.cachedStatement(
                    sql: "SELECT seq FROM push_devices WHERE container = ? AND environment = ? AND user = ? AND device = ?"),
                arguments: recipient.arguments + [device])
            try db.cachedStatement(
                sql: """
                    INSERT INTO push_devices (container, environment, user, device, seq, last_seen) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (container, environment, user, device) DO UPDATE SET seq = excluded.seq, last_seen = excluded.last_seen
                    """
            ).execute(arguments: recipient.arguments + [device, last, now])
            guard let cursor, cursor < last else { return nil }
            // Notifications created since the cursor, except those about this device's own changes.
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.notificationColumns) FROM notifications
                        WHERE container = ? AND environment = ? AND user = ? AND created_seq > ?
                          AND NOT (origin_device IS ? AND origin_user IS ?)
                        ORDER BY created_seq DESC
                        """),
                arguments: recipient.arguments + [cursor, device, recipient.userRecordName])
            guard let latest = rows.first.map(Self.storedNotification) else { return nil }
            return MissedNotifications(latest: latest, count: rows.count)
        }
    }

    public func disconnect(
        device: String, for recipient: NotificationRecipient, deliveredThrough sequence: Int64, now: Int64
    ) async throws {
        try await pool.write { db in
            try db.cachedStatement(
                sql: """
                    UPDATE push_devices SET seq = MAX(seq, ?), last_seen = ?
                    WHERE container = ? AND environment = ? AND user = ? AND device = ?
                    """
            ).execute(arguments: [sequence, now] + recipient.arguments + [device])
        }
    }
}

extension SQLiteStore {
    public func createPushToken(for recipient: NotificationRecipient, apnsEnvironment: String, now: Int64)
        async throws -> PushToken
    {
        let token = RandomToken.hex(bytes: 24)
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO push_tokens (token, container, environment, user, apns_environment, created_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [token] + recipient.arguments + [apnsEnvironment, now])
        }
        return PushToken(token: token, recipient: recipient, apnsEnvironment: apnsEnvironment, registered: false)
    }

    public func registerPushToken(
        _ token: String, for recipient: NotificationRecipient, apnsEnvironment: String, now: Int64
    ) async throws -> PushToken {
        try await pool.write { db in
            guard let row = try Row.fetchOne(
                db, sql: "SELECT container, environment, user FROM push_tokens WHERE token = ?", arguments: [token])
            else { throw PushTokenRules.notIssued }
            guard (row[0] as String) == recipient.container, (row[1] as String) == recipient.environment.rawValue,
                (row[2] as String) == recipient.userRecordName
            else { throw PushTokenRules.issuedToAnother }
            try db.execute(
                sql: "UPDATE push_tokens SET apns_environment = ?, registered_at = ? WHERE token = ?",
                arguments: [apnsEnvironment, now, token])
            // The courier delivers what happens from registration on.
            let last = try Self.lastSequence(db, recipient)
            try db.execute(
                sql: """
                    INSERT INTO push_devices (container, environment, user, device, seq, last_seen) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (container, environment, user, device) DO UPDATE SET last_seen = excluded.last_seen
                    """,
                arguments: recipient.arguments + [token, last, now])
        }
        return PushToken(token: token, recipient: recipient, apnsEnvironment: apnsEnvironment, registered: true)
    }

    public func pushToken(_ token: String) async throws -> PushToken? {
        try await pool.read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT container, environment, user, apns_environment, registered_at FROM push_tokens WHERE token = ?",
                arguments: [token]
            ).map { row in
                PushToken(
                    token: token,
                    recipient: NotificationRecipient(
                        container: row[0], environment: ContainerEnvironment(rawValue: row[1]) ?? .development,
                        userRecordName: row[2]),
                    apnsEnvironment: row[3], registered: (row[4] as Int64?) != nil)
            }
        }
    }

    public func compactNotifications(retentionMillis: Int64, now: Int64) async throws -> Int {
        let cutoff = now - retentionMillis
        return try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE notification_users SET horizon = MAX(horizon, (
                        SELECT MAX(n.seq) FROM notifications n
                        WHERE n.container = notification_users.container AND n.environment = notification_users.environment
                          AND n.user = notification_users.user AND n.created_at < ?))
                    WHERE EXISTS (
                        SELECT 1 FROM notifications n
                        WHERE n.container = notification_users.container AND n.environment = notification_users.environment
                          AND n.user = notification_users.user AND n.created_at < ?)
                    """,
                arguments: [cutoff, cutoff])
            try db.execute(sql: "DELETE FROM notifications WHERE created_at < ?", arguments: [cutoff])
            let removed = db.changesCount
            try db.execute(sql: "DELETE FROM push_devices WHERE last_seen < ?", arguments: [cutoff])
            try db.execute(
                sql: "DELETE FROM push_tokens WHERE COALESCE(registered_at, created_at) < ? AND token NOT IN (SELECT device FROM push_devices)",
                arguments: [cutoff])
            return removed
        }
    }
}

extension NotificationRecipient {
    var arguments: StatementArguments {
        [container, environment.rawValue, userRecordName]
    }
}
