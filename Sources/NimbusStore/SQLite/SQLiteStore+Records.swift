import GRDB
import NimbusProtocol

extension SQLiteStore: RecordStore {
    public func modifyRecords(
        _ operations: [RecordOperation], zone: String, atomic: Bool, policy: WritePolicy, caller: Caller,
        in database: DatabaseKey
    ) async throws -> ModifyOutcome {
        try await pool.write { db in
            let (dbID, baseVersion) = try Self.ensureDatabase(db, database)
            guard let zoneState = try Self.zone(db, database: dbID, name: zone), !zoneState.deleted else {
                throw CloudKitError(
                    .zoneNotFound, "zone '\(zone)' does not exist in this database",
                    zoneID: ZoneID(zoneName: zone, ownerRecordName: database.owner))
            }
            let zoneID = ZoneID(zoneName: zone, ownerRecordName: database.owner)
            let rows = try Self.records(
                db, database: dbID, zone: zone, names: ModifyPlanner.prefetchNames(for: operations))
            var planner = ModifyPlanner(
                zoneID: zoneID, policy: policy, caller: caller, rows: rows, baseVersion: baseVersion)
            var plan = planner.plan(operations, atomic: atomic)
            while !plan.deletedNames.isEmpty {
                let children = try Self.deleteSelfChildren(db, database: dbID, zone: zone, of: plan.deletedNames)
                plan = planner.cascade(children: children)
            }
            guard !plan.writes.isEmpty else { return ModifyOutcome(results: plan.results, commit: nil) }

            for (before, after) in plan.changes {
                try Self.write(db, database: dbID, zone: zone, record: after)
                try Self.updateReferences(db, database: dbID, zone: zone, before: before, after: after)
            }
            try db.execute(
                sql: "UPDATE zones SET change_version = ? WHERE db = ? AND name = ?",
                arguments: [plan.lastVersion, dbID, zone])
            try Self.setVersion(db, database: dbID, version: plan.lastVersion)
            let notifications = try Self.recordNotifications(
                db, database: database, databaseID: dbID, event: .records(zoneName: zone, changes: plan.changes),
                caller: caller, now: policy.now)
            let summary = CommitSummary(
                database: database, zoneName: zone, version: plan.lastVersion, changes: plan.changes, caller: caller,
                notifications: notifications)
            return ModifyOutcome(results: plan.results, commit: summary)
        }
    }

    public func lookupRecords(_ names: [String], zone: String, in database: DatabaseKey) async throws
        -> [StoredRecord?]
    {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else {
                if zone == ZoneID.defaultZoneName { return names.map { _ in nil } }
                throw Self.zoneNotFound(zone, database)
            }
            guard let zoneState = try Self.zone(db, database: dbRow.id, name: zone), !zoneState.deleted else {
                throw Self.zoneNotFound(zone, database)
            }
            let rows = try Self.records(db, database: dbRow.id, zone: zone, names: names)
            return names.map { name in rows[name].flatMap { $0.deleted ? nil : $0 } }
        }
    }

    public func recordChanges(zone: String, since token: String?, limit: Int, in database: DatabaseKey) async throws
        -> RecordChangesPage
    {
        let position = try token.map { token throws(CloudKitError) in try ChangeToken.decodeRecords(token) }
        return try readOnCallingThread { db in
            guard let dbRow = try Self.databaseRow(db, database) else {
                if zone == ZoneID.defaultZoneName, position == nil {
                    return RecordChangesPage(
                        records: [], syncToken: ChangeToken.records(incarnation: 0, version: 0), moreComing: false)
                }
                throw Self.zoneNotFound(zone, database)
            }
            guard let zoneState = try Self.zone(db, database: dbRow.id, name: zone), !zoneState.deleted else {
                throw Self.zoneNotFound(zone, database)
            }
            let since = position?.version ?? 0
            if let position {
                if position.incarnation != zoneState.incarnation {
                    // The zone the token describes was deleted; the zone of that name now is a
                    // new one. Answer as for a deleted zone, so clients recover the way they do
                    // from a zone deletion (re-upload or drop their copies) instead of merely
                    // refetching, which would silently lose what the old zone held.
                    throw CloudKitError(
                        .zoneNotFound,
                        "the zone '\(zone)' this sync token belongs to was deleted (a zone of that name was "
                            + "created since); treat the zone as deleted, then fetch without a sync token",
                        zoneID: ZoneID(zoneName: zone, ownerRecordName: database.owner))
                }
                if position.version < zoneState.horizon {
                    throw CloudKitError(
                        .changeTokenExpired,
                        "the sync token is older than the tombstone retention window of zone '\(zone)'; "
                            + "fetch the zone's changes again without a sync token",
                        zoneID: ZoneID(zoneName: zone, ownerRecordName: database.owner))
                }
            }
            // Records created and deleted since the token are of no interest to the reader;
            // with no token, no tombstone is.
            var records = try Self.fetchStoredRecords(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.recordColumns) FROM records
                        WHERE db = ? AND zone = ? AND version > ? AND NOT (deleted = 1 AND created_version > ?)
                        ORDER BY version LIMIT ?
                        """),
                arguments: [dbRow.id, zone, since, since, limit + 1])
            let moreComing = records.count > limit
            if moreComing { records.removeLast(records.count - limit) }
            let tokenVersion = moreComing ? records.last!.version : max(since, dbRow.version)
            return RecordChangesPage(
                records: records,
                syncToken: ChangeToken.records(incarnation: zoneState.incarnation, version: tokenVersion),
                moreComing: moreComing)
        }
    }

    static func zoneNotFound(_ zone: String, _ database: DatabaseKey) -> CloudKitError {
        CloudKitError(
            .zoneNotFound, "zone '\(zone)' does not exist in this database",
            zoneID: ZoneID(zoneName: zone, ownerRecordName: database.owner))
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
                    SELECT \(recordColumns.split(separator: ",").map { "r." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", "))
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
        if let before, mentionsDeleteSelf(before.fieldsJSON) {
            try db.cachedStatement(sql: "DELETE FROM record_refs WHERE db = ? AND zone = ? AND source = ?")
                .execute(arguments: [database, zone, after.recordName])
        }
        guard !after.deleted, mentionsDeleteSelf(after.fieldsJSON) else { return }
        let targets = Set(try after.fields().values.flatMap(\.references).filter { $0.action == .deleteSelf }.map(\.recordName))
        for target in targets {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO record_refs (db, zone, target, source) VALUES (?, ?, ?, ?)"
            ).execute(arguments: [database, zone, target, after.recordName])
        }
    }
}

import Foundation

extension SQLiteStore {
    private static let deleteSelfMarker = Array("DELETE_SELF".utf8)

    /// Whether the fields JSON contains `DELETE_SELF`: a byte search (Foundation's
    /// `String.contains` bridges through NSString and took a tenth of a batched write).
    static func mentionsDeleteSelf(_ fieldsJSON: String) -> Bool {
        var text = fieldsJSON
        return text.withUTF8 { bytes in
            let marker = deleteSelfMarker
            guard bytes.count >= marker.count else { return false }
            let last = bytes.count - marker.count
            var position = 0
            while position <= last {
                if bytes[position] == marker[0] {
                    var matched = 1
                    while matched < marker.count && bytes[position + matched] == marker[matched] { matched += 1 }
                    if matched == marker.count { return true }
                }
                position += 1
            }
            return false
        }
    }
}

extension SQLiteStore {
    /// A read on the calling thread (GRDB's synchronous `read`), without the hop to a reader
    /// queue and back that `await pool.read` makes.
    func readOnCallingThread<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.read(body)
    }
}
