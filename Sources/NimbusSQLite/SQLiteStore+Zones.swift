import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore {
    public func listZones(in database: DatabaseKey) async throws -> [ZoneState] {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else { return [ZoneState.defaultZone] }
            return try Row.fetchAll(
                db, sql: "SELECT * FROM zones WHERE db = ? AND deleted = 0 ORDER BY name != ?, name",
                arguments: [dbRow.id, ZoneID.defaultZoneName]
            ).map(Self.zoneState)
        }
    }

    public func lookupZones(_ names: [String], in database: DatabaseKey) async throws -> [ZoneState?] {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else {
                return names.map { $0 == ZoneID.defaultZoneName ? ZoneState.defaultZone : nil }
            }
            return try names.map { name in
                try Self.zone(db, database: dbRow.id, name: name).flatMap { $0.deleted ? nil : $0 }
            }
        }
    }

    public func modifyZones(_ operations: [ZoneOperation], caller: Caller?, in database: DatabaseKey) async throws
        -> ZoneModifyOutcome
    {
        let now = clock.nowMillis()
        return try await pool.write { db in
            let (dbID, baseVersion) = try Self.ensureDatabase(db, database)
            var zones: [String: ZoneState] = [:]
            for operation in operations {
                switch operation {
                case .create(let name), .delete(let name):
                    if zones[name] == nil, let zone = try Self.zone(db, database: dbID, name: name) { zones[name] = zone }
                }
            }
            var change = ZoneChangeSet(zones: zones, version: baseVersion, now: now)
            let results = operations.map { change.apply($0) }
            guard !change.touched.isEmpty else { return ZoneModifyOutcome(results: results) }
            for name in change.emptied {
                let freed = try Self.zoneDeletionDelta(db, databaseID: dbID, zone: name)
                for table in ["records", "record_refs", "asset_refs"] {
                    try db.execute(sql: "DELETE FROM \(table) WHERE db = ? AND zone = ?", arguments: [dbID, name])
                }
                try Self.deleteIndexEntries(db, database: dbID, zone: name)
                try Self.addUsage(db, databaseID: dbID, freed, quota: nil)
            }
            for name in change.touched {
                guard let zone = change.zones[name] else { continue }
                try db.execute(
                    sql: """
                        INSERT OR REPLACE INTO zones
                            (db, name, incarnation, change_version, meta_version, horizon, deleted, deleted_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [
                        dbID, name, zone.incarnation, zone.changeVersion, zone.metaVersion, zone.horizon, zone.deleted,
                        change.deletedAt[name] ?? nil,
                    ])
            }
            try Self.setVersion(db, database: dbID, version: change.version)
            let notifications = try Self.recordNotifications(
                db, database: database, databaseID: dbID, event: .zones(created: change.created, deleted: change.deleted),
                caller: caller, now: now)
            return ZoneModifyOutcome(results: results, notifications: notifications)
        }
    }

    /// The zone feed in one read (the rules: ``RecordStore/zoneChanges(_:since:limit:in:)``).
    public func zoneChanges(_ feed: ZoneFeed, since: Int64, limit: Int, in database: DatabaseKey) async throws
        -> ZoneChangesPage
    {
        let column = feed.column
        let tokens = changeTokens
        return try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else {
                if since > 0 { throw FeedRules.tokenAhead() }
                return ZoneChangesPage(zones: [], syncToken: feed.token(since, tokens: tokens, in: database), moreComing: false)
            }
            try FeedRules.checkZoneToken(since: since, head: dbRow.version, horizon: dbRow.zoneHorizon)
            let zones = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM zones WHERE db = ? AND \(column) > ?
                      AND NOT (deleted = 1 AND ? = 0)
                    ORDER BY \(column) LIMIT ?
                    """,
                arguments: [dbRow.id, since, since, FeedPaging.readLimit(limit)]
            ).map(Self.zoneState)
            let page = FeedPaging.cut(zones, limit: limit, since: since, head: dbRow.version, position: feed.version(of:))
            return ZoneChangesPage(
                zones: page.entries, syncToken: feed.token(page.tokenPosition, tokens: tokens, in: database),
                moreComing: page.moreComing)
        }
    }

    public func compact(retentionMillis: Int64, now: Int64) async throws -> CompactionReport {
        let cutoff = now - retentionMillis
        return try await pool.write { db in
            try db.execute(
                // Only the old tombstones are read (the `records_tombstones` index), never a
                // zone's live records: a pass costs what it removes, however large the store.
                sql: """
                    UPDATE zones SET horizon = MAX(zones.horizon, old.version)
                    FROM (
                        SELECT db, zone, MAX(version) AS version FROM records
                        WHERE deleted = 1 AND modified_at <= ? GROUP BY db, zone) AS old
                    WHERE zones.db = old.db AND zones.name = old.zone
                    """,
                arguments: [cutoff])
            // Tombstones hold no counted bytes (`DatabaseUsage`): the usage counters stay.
            try db.execute(sql: "DELETE FROM records WHERE deleted = 1 AND modified_at <= ?", arguments: [cutoff])
            let tombstones = db.changesCount
            try db.execute(
                sql: """
                    UPDATE databases SET zone_horizon = MAX(zone_horizon, (
                        SELECT MAX(z.meta_version) FROM zones z
                        WHERE z.db = databases.id AND z.deleted = 1 AND z.deleted_at <= ?))
                    WHERE EXISTS (SELECT 1 FROM zones z WHERE z.db = databases.id AND z.deleted = 1 AND z.deleted_at <= ?)
                    """,
                arguments: [cutoff, cutoff])
            try db.execute(sql: "DELETE FROM zones WHERE deleted = 1 AND deleted_at <= ?", arguments: [cutoff])
            let zones = db.changesCount
            return CompactionReport(tombstonesRemoved: tombstones, zonesRemoved: zones)
        }
    }
}
