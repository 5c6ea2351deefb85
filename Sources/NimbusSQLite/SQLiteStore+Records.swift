import Foundation
import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: RecordStore {
    /// Runs `transaction` with SQLite's one writer: the rows it names and the asset context
    /// are read, planned and written under it.
    public func modify(_ request: ModifyTransaction) async throws -> ModifyOutcome {
        let database = request.database
        let zone = request.zone
        return try await pool.write { db in
            var transaction = request
            let (dbID, baseVersion) = try Self.ensureDatabase(db, database)
            var plan = try transaction.plan(
                zoneIsLive: try Self.zone(db, database: dbID, name: zone)?.deleted == false,
                rows: try Self.records(db, database: dbID, zone: zone, names: transaction.names),
                baseVersion: baseVersion,
                assets: try Self.assetContext(
                    db, database: database, databaseID: dbID, receipts: transaction.receipts,
                    namedHashes: transaction.namedHashes))
            while let parents = plan.cascadingParents {
                plan = transaction.cascade(
                    children: try Self.deleteSelfChildren(db, database: dbID, zone: zone, of: parents))
            }
            guard transaction.writes(plan) else { return transaction.unchanged(plan) }

            try Self.write(db, database: dbID, zone: zone, records: plan.changes.lazy.map(\.after))
            for (before, after) in plan.changes {
                try Self.updateReferences(db, database: dbID, zone: zone, before: before, after: after)
            }
            let assetBytes = try Self.writeAssetChanges(db, database: dbID, zone: zone, plan: plan)
            // Over the quota, this throws and the transaction rolls back: nothing is written.
            try Self.addUsage(
                db, databaseID: dbID,
                UsageDelta(recordBytes: UsageDelta.recordBytes(of: plan.changes), assetBytes: assetBytes),
                quota: transaction.policy.quotaBytes)
            var layouts = IndexLayoutCache(database: database)
            try Self.updateIndexEntries(db, database: dbID, zone: zone, changes: plan.changes, layouts: &layouts)
            try db.cachedStatement(sql: "UPDATE zones SET change_version = ? WHERE db = ? AND name = ?")
                .execute(arguments: [plan.lastVersion, dbID, zone])
            try Self.setVersion(db, database: dbID, version: plan.lastVersion)
            let notifications = try Self.recordNotifications(
                db, database: database, databaseID: dbID, event: transaction.commitEvent(of: plan),
                caller: transaction.caller, now: transaction.policy.now)
            return transaction.committed(plan, notifications: notifications)
        }
    }

    public func lookupRecords(_ names: [String], zone: String, in database: DatabaseKey) async throws
        -> [StoredRecord?]
    {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else {
                if zone == ZoneID.defaultZoneName { return names.map { _ in nil } }
                throw FeedRules.zoneNotFound(zone, in: database)
            }
            guard let zoneState = try Self.zone(db, database: dbRow.id, name: zone), !zoneState.deleted else {
                throw FeedRules.zoneNotFound(zone, in: database)
            }
            let rows = try Self.records(db, database: dbRow.id, zone: zone, names: names)
            return names.map { name in rows[name].flatMap { $0.deleted ? nil : $0 } }
        }
    }

    public func recordChanges(zone: String, since token: String?, limit: Int, in database: DatabaseKey) async throws
        -> RecordChangesPage
    {
        let tokens = changeTokens
        let position = try token.map { token throws(CloudKitError) in
            try tokens.decodeRecords(token, zone: zone, in: database)
        }
        return try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else {
                try FeedRules.checkUnwrittenDatabase(zone: zone, position: position, in: database)
                return RecordChangesPage(
                    records: [], syncToken: tokens.recordsOfUnwrittenDatabase(zone: zone, in: database),
                    moreComing: false)
            }
            guard let zoneState = try Self.zone(db, database: dbRow.id, name: zone), !zoneState.deleted else {
                throw FeedRules.zoneNotFound(zone, in: database)
            }
            let since = position?.version ?? 0
            if let position {
                try FeedRules.checkRecordToken(position, zone: zoneState, databaseVersion: dbRow.version, in: database)
            }
            // Records created and deleted since the token are of no interest to the reader;
            // with no token, no tombstone is.
            let records = try Self.fetchStoredRecords(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.recordColumns) FROM records
                        WHERE db = ? AND zone = ? AND version > ? AND NOT (deleted = 1 AND created_version > ?)
                        ORDER BY version LIMIT ?
                        """),
                arguments: [dbRow.id, zone, since, since, FeedPaging.readLimit(limit)])
            let page = FeedPaging.cut(records, limit: limit, since: since, head: dbRow.version, position: \.version)
            return RecordChangesPage(
                records: page.entries,
                syncToken: tokens.records(zone: zone, state: zoneState, version: page.tokenPosition, in: database),
                moreComing: page.moreComing)
        }
    }

    public func countRecordChanges(zone: String, since token: String, in database: DatabaseKey) async throws -> Int {
        let since = try changeTokens.decodeRecords(token, zone: zone, in: database).version
        return try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else { return 0 }
            return try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count(*) FROM records WHERE db = ? AND zone = ? AND version > ?"),
                arguments: [dbRow.id, zone, since]) ?? 0
        }
    }

    static func deleteSelfChildren(_ db: Database, database: Int64, zone: String, of parents: [String]) throws
        -> [StoredRecord]
    {
        var children: [StoredRecord] = []
        for start in stride(from: 0, to: parents.count, by: 500) {
            let chunk = Array(parents[start..<min(start + 500, parents.count)])
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT \(prefixedRecordColumns)
                    FROM record_refs f JOIN records r ON r.db = f.db AND r.zone = f.zone AND r.name = f.source
                    WHERE f.db = ? AND f.zone = ? AND f.target IN (\(databaseQuestionMarks(count: chunk.count)))
                      AND r.deleted = 0
                    """,
                arguments: StatementArguments([database, zone] as [any DatabaseValueConvertible] + chunk))
            children.append(contentsOf: rows.map(storedRecord))
        }
        return children
    }

    /// Keeps `record_refs` (the DELETE_SELF index) in step with a written row. Only rows
    /// whose JSON mentions DELETE_SELF are parsed, so the common write pays nothing.
    static func updateReferences(
        _ db: Database, database: Int64, zone: String, before: StoredRecord?, after: StoredRecord
    ) throws {
        if let before, DeleteSelfReferences.mentioned(in: before.fieldsJSON) {
            try db.cachedStatement(sql: "DELETE FROM record_refs WHERE db = ? AND zone = ? AND source = ?")
                .execute(arguments: [database, zone, after.recordName])
        }
        for target in try DeleteSelfReferences.targets(of: after) {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO record_refs (db, zone, target, source) VALUES (?, ?, ?, ?)"
            ).execute(arguments: [database, zone, target, after.recordName])
        }
    }
}
