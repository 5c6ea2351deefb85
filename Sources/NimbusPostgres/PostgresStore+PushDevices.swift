import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// Moves the device's cursor to the recipient's last sequence number and reads the
    /// previous cursor in one statement; then counts what was created in between. The count
    /// stops at the sequence number the cursor moved to: later notifications reach the
    /// device live, not twice.
    public func catchUp(device: String, for recipient: NotificationRecipient, now: Int64) async throws
        -> MissedNotifications?
    {
        guard
            let row = try await rows(
                """
                WITH last AS (SELECT last_seq FROM notification_users WHERE \(recipient: recipient, qualifiedBy: nil)),
                previous AS (
                    SELECT seq FROM push_devices WHERE \(recipient: recipient, qualifiedBy: nil) AND device = \(device)),
                moved AS (
                    INSERT INTO push_devices (container, environment, recipient, device, seq, last_seen)
                    VALUES (\(recipient.container), \(recipient.environment.rawValue), \(recipient.userRecordName),
                        \(device), COALESCE((SELECT last_seq FROM last), 0), \(now))
                    ON CONFLICT (container, environment, recipient, device)
                        DO UPDATE SET seq = EXCLUDED.seq, last_seen = EXCLUDED.last_seen)
                SELECT (SELECT seq FROM previous), COALESCE((SELECT last_seq FROM last), 0)
                """
            ).first
        else { return nil }
        let (cursor, last) = try row.decode((Int64?, Int64).self)
        guard let cursor, cursor < last else { return nil }
        // Notifications created since the cursor, except those about this device's own changes.
        guard
            let latest = try await rows(
                """
                SELECT \(unescaped: Self.notificationColumns), count(*) OVER ()
                FROM notifications
                WHERE \(recipient: recipient, qualifiedBy: nil) AND created_seq > \(cursor) AND created_seq <= \(last)
                  AND NOT (origin_device IS NOT DISTINCT FROM \(device)
                      AND origin_user IS NOT DISTINCT FROM \(recipient.userRecordName))
                ORDER BY created_seq DESC LIMIT 1
                """
            ).first
        else { return nil }
        var columns = ColumnReader(latest)
        let notification = try columns.notification()
        return MissedNotifications(latest: notification, count: Int(try columns.next(Int64.self)))
    }

    public func disconnect(
        device: String, for recipient: NotificationRecipient, deliveredThrough sequence: Int64, now: Int64
    ) async throws {
        try await rows(
            """
            UPDATE push_devices SET seq = GREATEST(seq, \(sequence)), last_seen = \(now)
            WHERE \(recipient: recipient, qualifiedBy: nil) AND device = \(device)
            """)
    }

    public func createPushToken(for recipient: NotificationRecipient, apnsEnvironment: String, now: Int64)
        async throws -> PushToken
    {
        let token = RandomToken.hex(bytes: 24)
        try await rows(
            """
            INSERT INTO push_tokens (token, container, environment, recipient, apns_environment, created_at)
            VALUES (\(token), \(recipient.container), \(recipient.environment.rawValue), \(recipient.userRecordName),
                \(apnsEnvironment), \(now))
            """)
        return PushToken(token: token, recipient: recipient, apnsEnvironment: apnsEnvironment, registered: false)
    }

    /// Registers in one statement: the token is updated only if it was issued to the same
    /// recipient; the courier's cursor starts at the present. The answer tells a token never
    /// issued from one issued to someone else.
    public func registerPushToken(
        _ token: String, for recipient: NotificationRecipient, apnsEnvironment: String, now: Int64
    ) async throws -> PushToken {
        let answer = try await rows(
            """
            WITH issued AS (SELECT 1 FROM push_tokens WHERE token = \(token)),
            registered AS (
                UPDATE push_tokens SET apns_environment = \(apnsEnvironment), registered_at = \(now)
                WHERE token = \(token) AND container = \(recipient.container)
                  AND environment = \(recipient.environment.rawValue) AND recipient = \(recipient.userRecordName)
                RETURNING token),
            device AS (
                INSERT INTO push_devices (container, environment, recipient, device, seq, last_seen)
                SELECT \(recipient.container), \(recipient.environment.rawValue), \(recipient.userRecordName), token,
                    COALESCE((SELECT last_seq FROM notification_users WHERE \(recipient: recipient, qualifiedBy: nil)), 0),
                    \(now)
                FROM registered
                ON CONFLICT (container, environment, recipient, device) DO UPDATE SET last_seen = EXCLUDED.last_seen
                RETURNING device)
            SELECT EXISTS (SELECT 1 FROM issued), EXISTS (SELECT 1 FROM device)
            """)
        let (issued, registered) = try answer.first.map { try $0.decode((Bool, Bool).self) } ?? (false, false)
        guard issued else { throw PushTokenRules.notIssued }
        guard registered else { throw PushTokenRules.issuedToAnother }
        return PushToken(token: token, recipient: recipient, apnsEnvironment: apnsEnvironment, registered: true)
    }

    public func pushToken(_ token: String) async throws -> PushToken? {
        try await rows(
            """
            SELECT container, environment, recipient, apns_environment, registered_at IS NOT NULL
            FROM push_tokens WHERE token = \(token)
            """
        ).first.map { row in
            let (container, environment, user, apnsEnvironment, registered) = try row.decode(
                (String, String, String, String, Bool).self)
            return PushToken(
                token: token,
                recipient: NotificationRecipient(
                    container: container, environment: ContainerEnvironment(rawValue: environment) ?? .development,
                    userRecordName: user),
                apnsEnvironment: apnsEnvironment, registered: registered)
        }
    }
}
