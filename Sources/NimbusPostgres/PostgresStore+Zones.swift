import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// Every database has its default zone row from its first use, so no row at all means
    /// the database was never written.
    public func listZones(in database: DatabaseKey) async throws -> [ZoneState] {
        let zones = try await rows(
            """
            SELECT \(unescaped: Self.zoneColumnsZ) FROM databases d JOIN zones z ON z.db = d.id
            WHERE \(database: database) AND NOT z.deleted
            ORDER BY z.name <> \(ZoneID.defaultZoneName), z.name
            """
        ).map { row in
            var columns = ColumnReader(row)
            return try columns.zone()
        }
        return zones.isEmpty ? [ZoneState.defaultZone] : zones
    }

    public func lookupZones(_ names: [String], in database: DatabaseKey) async throws -> [ZoneState?] {
        var found: [String: ZoneState] = [:]
        for row in try await rows(
            """
            SELECT \(unescaped: Self.zoneColumnsZ) FROM databases d JOIN zones z ON z.db = d.id
            WHERE \(database: database) AND NOT z.deleted AND z.name = ANY(\(names))
            """)
        {
            var columns = ColumnReader(row)
            let zone = try columns.zone()
            found[zone.zoneName] = zone
        }
        // The default zone is missing only from a database never written.
        return names.map { found[$0] ?? ($0 == ZoneID.defaultZoneName ? ZoneState.defaultZone : nil) }
    }

    /// Applies the operations in order to the zones as read under the database lock, then
    /// writes their final states, the deleted zones' records, the version and the usage the
    /// deleted zones free (counted in the statement's snapshot, before its deletes) in one
    /// statement.
    public func modifyZones(_ operations: [ZoneOperation], caller: Caller?, in database: DatabaseKey) async throws
        -> ZoneModifyOutcome
    {
        try await transaction { transaction in
            let (dbID, firstVersion) = try await lockDatabase(transaction, database, bump: true)
            let names = operations.map { operation in
                switch operation {
                case .create(let name), .delete(let name): return name
                }
            }
            var zones: [String: ZoneState] = [:]
            for row in try await transaction.rows(
                "SELECT \(unescaped: Self.zoneColumns) FROM zones WHERE db = \(dbID) AND name = ANY(\(names))")
            {
                var columns = ColumnReader(row)
                let zone = try columns.zone()
                zones[zone.zoneName] = zone
            }
            let now = self.clock.nowMillis()
            var change = ZoneChangeSet(zones: zones, version: firstVersion - 1, now: now)
            let results = operations.map { change.apply($0) }
            guard !change.touched.isEmpty else {
                transaction.rollbackOnly = true
                return ZoneModifyOutcome(results: results)
            }
            let written = change.touched.compactMap { change.zones[$0] }
            let emptied = Array(change.emptied)
            let usage = Self.usageAssignments(
                expectedVersion: "\(firstVersion - 1)", version: "\(change.version)",
                recordBytes: "- freed.freed_records", assetBytes: "- freed.freed_assets")
            let rows = try await transaction.rows(
                """
                WITH freed AS (
                    SELECT
                        (SELECT COALESCE(sum(octet_length(r.fields)), 0)::int8 FROM records r
                            WHERE r.db = \(dbID) AND r.zone = ANY(\(emptied)) AND NOT r.deleted) AS freed_records,
                        (SELECT COALESCE(sum(a.size), 0)::int8 FROM assets a
                            WHERE a.db = \(dbID)
                              AND a.sha256 IN (SELECT sha256 FROM asset_refs WHERE db = \(dbID) AND zone = ANY(\(emptied)))
                              AND NOT EXISTS (
                                  SELECT 1 FROM asset_refs f
                                  WHERE f.db = a.db AND f.sha256 = a.sha256 AND f.zone <> ALL(\(emptied)))) AS freed_assets),
                dropped_records AS (DELETE FROM records WHERE db = \(dbID) AND zone = ANY(\(emptied))),
                dropped_refs AS (DELETE FROM record_refs WHERE db = \(dbID) AND zone = ANY(\(emptied))),
                dropped_assets AS (DELETE FROM asset_refs WHERE db = \(dbID) AND zone = ANY(\(emptied))),
                dropped_values AS (DELETE FROM record_values WHERE db = \(dbID) AND zone = ANY(\(emptied))),
                dropped_tokens AS (DELETE FROM record_tokens WHERE db = \(dbID) AND zone = ANY(\(emptied))),
                database_version AS (
                    UPDATE databases SET version = \(change.version), \(unescaped: usage) FROM freed WHERE id = \(dbID)),
                written AS (
                    INSERT INTO zones (db, name, incarnation, change_version, meta_version, horizon, deleted, deleted_at)
                    SELECT \(dbID), t.* FROM unnest(
                        \(written.map(\.zoneName))::text[], \(written.map(\.incarnation))::int8[],
                        \(written.map(\.changeVersion))::int8[], \(written.map(\.metaVersion))::int8[],
                        \(written.map(\.horizon))::int8[], \(written.map(\.deleted))::bool[],
                        \(NullableArray(written.map { change.deletedAt[$0.zoneName] ?? nil }))::int8[]) AS t
                    ON CONFLICT (db, name) DO UPDATE SET
                        incarnation = EXCLUDED.incarnation, change_version = EXCLUDED.change_version,
                        meta_version = EXCLUDED.meta_version, horizon = EXCLUDED.horizon,
                        deleted = EXCLUDED.deleted, deleted_at = EXCLUDED.deleted_at)
                SELECT owner, definition, created_at FROM subscriptions WHERE db = \(dbID) AND kind <> 'query'
                """)
            let notifications = try await createNotifications(
                transaction, database: database, databaseID: dbID,
                event: .zones(created: change.created, deleted: change.deleted),
                subscriptions: try Self.subscriptions(rows), caller: caller, now: now)
            return ZoneModifyOutcome(results: results, notifications: notifications)
        }
    }

    /// The zone feed in one statement (the rules: ``RecordStore/zoneChanges(_:since:limit:in:)``).
    public func zoneChanges(_ feed: ZoneFeed, since: Int64, limit: Int, in database: DatabaseKey) async throws
        -> ZoneChangesPage
    {
        let column = feed.column
        let rows = try await rows(
            """
            SELECT d.version, d.zone_horizon, \(unescaped: Self.zoneColumnsZ)
            FROM databases d
            LEFT JOIN LATERAL (
                SELECT * FROM zones
                WHERE db = d.id AND \(unescaped: column) > \(since) AND NOT (deleted AND \(since) = 0)
                ORDER BY \(unescaped: column) LIMIT \(Int64(FeedPaging.readLimit(limit)))
            ) z ON true
            WHERE \(database: database)
            ORDER BY z.\(unescaped: column)
            """)
        let tokens = try changeTokens
        guard !rows.isEmpty else {
            if since > 0 { throw FeedRules.tokenAhead() }
            return ZoneChangesPage(zones: [], syncToken: feed.token(since, tokens: tokens, in: database), moreComing: false)
        }
        var databaseVersion: Int64 = 0
        var zoneHorizon: Int64 = 0
        var zones: [ZoneState] = []
        for row in rows {
            var columns = ColumnReader(row)
            databaseVersion = try columns.next()
            zoneHorizon = try columns.next()
            if let zone = try columns.optionalZone() { zones.append(zone) }
        }
        try FeedRules.checkZoneToken(since: since, head: databaseVersion, horizon: zoneHorizon)
        let page = FeedPaging.cut(zones, limit: limit, since: since, head: databaseVersion, position: feed.version(of:))
        return ZoneChangesPage(
            zones: page.entries, syncToken: feed.token(page.tokenPosition, tokens: tokens, in: database),
            moreComing: page.moreComing)
    }
}
