import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// Removes tombstones and deleted zones older than the retention window and raises the
    /// horizons below which tokens are expired, in one transaction. Neither holds counted
    /// bytes (``DatabaseUsage``), so the usage counters stay as they are.
    ///
    /// It first locks the rows of the databases it compacts, in id order, like a write of
    /// those databases would: a feed reader sees a horizon and the tombstones below it gone
    /// together, and a concurrent modify of the same database waits instead of deadlocking.
    public func compact(retentionMillis: Int64, now: Int64) async throws -> CompactionReport {
        let cutoff = now - retentionMillis
        return try await transaction { transaction in
            let databases = try await transaction.rows(
                """
                SELECT id FROM databases WHERE id IN (
                    SELECT db FROM records WHERE deleted AND modified_at <= \(cutoff)
                    UNION SELECT db FROM zones WHERE deleted AND deleted_at <= \(cutoff))
                ORDER BY id
                FOR UPDATE
                """
            ).map { try $0.decode(Int64.self) }
            guard !databases.isEmpty else {
                transaction.rollbackOnly = true
                return CompactionReport(tombstonesRemoved: 0, zonesRemoved: 0)
            }
            let rows = try await transaction.rows(
                """
                WITH old_tombstones AS (
                    SELECT db, zone, max(version) AS version FROM records
                    WHERE deleted AND modified_at <= \(cutoff) AND db = ANY(\(databases))
                    GROUP BY db, zone),
                zone_horizons AS (
                    UPDATE zones z SET horizon = GREATEST(z.horizon, o.version) FROM old_tombstones o
                    WHERE z.db = o.db AND z.name = o.zone),
                removed_tombstones AS (
                    DELETE FROM records WHERE deleted AND modified_at <= \(cutoff) AND db = ANY(\(databases))
                    RETURNING 1),
                old_zones AS (
                    SELECT db, max(meta_version) AS version FROM zones
                    WHERE deleted AND deleted_at <= \(cutoff) AND db = ANY(\(databases))
                    GROUP BY db),
                database_horizons AS (
                    UPDATE databases d SET zone_horizon = GREATEST(d.zone_horizon, o.version) FROM old_zones o
                    WHERE d.id = o.db),
                removed_zones AS (
                    DELETE FROM zones WHERE deleted AND deleted_at <= \(cutoff) AND db = ANY(\(databases))
                    RETURNING 1)
                SELECT (SELECT count(*) FROM removed_tombstones), (SELECT count(*) FROM removed_zones)
                """)
            guard let row = rows.first else { return CompactionReport(tombstonesRemoved: 0, zonesRemoved: 0) }
            let (tombstones, zones) = try row.decode((Int64, Int64).self)
            return CompactionReport(tombstonesRemoved: Int(tombstones), zonesRemoved: Int(zones))
        }
    }

    /// Locks the recipients it compacts in a fixed order (as commits that notify several users
    /// do), raises their horizons and deletes their old notifications together.
    public func compactNotifications(retentionMillis: Int64, now: Int64) async throws -> Int {
        let cutoff = now - retentionMillis
        return try await transaction { transaction in
            var containers: [String] = []
            var environments: [String] = []
            var users: [String] = []
            for row in try await transaction.rows(
                """
                SELECT u.container, u.environment, u.recipient FROM notification_users u
                WHERE EXISTS (
                    SELECT 1 FROM notifications n
                    WHERE n.container = u.container AND n.environment = u.environment AND n.recipient = u.recipient
                      AND n.created_at < \(cutoff))
                ORDER BY u.container, u.environment, u.recipient
                FOR UPDATE
                """)
            {
                let (container, environment, user) = try row.decode((String, String, String).self)
                containers.append(container)
                environments.append(environment)
                users.append(user)
            }
            var removed = 0
            if !users.isEmpty {
                let rows = try await transaction.rows(
                    """
                    WITH locked AS (
                        SELECT * FROM unnest(\(containers)::text[], \(environments)::text[], \(users)::text[])
                            AS t(container, environment, recipient)),
                    old AS (
                        SELECT n.container, n.environment, n.recipient, max(n.seq) AS seq
                        FROM notifications n JOIN locked l USING (container, environment, recipient)
                        WHERE n.created_at < \(cutoff)
                        GROUP BY n.container, n.environment, n.recipient),
                    horizons AS (
                        UPDATE notification_users u SET horizon = GREATEST(u.horizon, old.seq) FROM old
                        WHERE u.container = old.container AND u.environment = old.environment
                          AND u.recipient = old.recipient),
                    deleted AS (
                        DELETE FROM notifications n USING locked l
                        WHERE n.container = l.container AND n.environment = l.environment
                          AND n.recipient = l.recipient AND n.created_at < \(cutoff)
                        RETURNING 1)
                    SELECT count(*) FROM deleted
                    """)
                removed = Int(try rows.first?.decode(Int64.self) ?? 0)
            }
            try await transaction.rows("DELETE FROM push_devices WHERE last_seen < \(cutoff)")
            try await transaction.rows(
                """
                DELETE FROM push_tokens WHERE COALESCE(registered_at, created_at) < \(cutoff)
                  AND token NOT IN (SELECT device FROM push_devices)
                """)
            return removed
        }
    }
}
