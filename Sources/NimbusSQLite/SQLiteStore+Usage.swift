import GRDB
import NimbusProtocol
import NimbusStore

/// The usage counter (``DatabaseUsage``): `record_bytes` and `asset_bytes` on each row of
/// `databases` (`v8-usage`), changed by every write in its own transaction — SQLite's single
/// writer orders them, so no change is lost.
extension SQLiteStore {
    /// A from-scratch count of the database whose id `database` is (an SQL expression):
    /// the bytes of its live records' fields, and the sizes of its assets some record
    /// references (each once).
    static func recountSQL(database: String) -> (recordBytes: String, assetBytes: String) {
        (
            """
            SELECT COALESCE(SUM(length(CAST(r.fields AS BLOB))), 0) FROM records r
            WHERE r.db = \(database) AND r.deleted = 0
            """,
            """
            SELECT COALESCE(SUM(a.size), 0) FROM assets a
            WHERE a.db = \(database) AND EXISTS (SELECT 1 FROM asset_refs f WHERE f.db = a.db AND f.sha256 = a.sha256)
            """
        )
    }

    static func recountUsage(_ db: Database, databaseID: Int64) throws -> DatabaseUsage {
        let sql = recountSQL(database: "?")
        return DatabaseUsage(
            recordBytes: try Int64.fetchOne(db, sql: sql.recordBytes, arguments: [databaseID]) ?? 0,
            assetBytes: try Int64.fetchOne(db, sql: sql.assetBytes, arguments: [databaseID]) ?? 0)
    }

    static func counter(_ db: Database, databaseID: Int64) throws -> DatabaseUsage {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT record_bytes, asset_bytes FROM databases WHERE id = ?"),
            arguments: [databaseID])
        return row.map { DatabaseUsage(recordBytes: $0[0], assetBytes: $0[1]) } ?? .empty
    }

    /// Adds a write's `delta` to the database's counter and, when the write grows the
    /// database, holds it to `quota`.
    /// - Throws: QUOTA_EXCEEDED (``DatabaseUsage/exceeding(_:grownBy:)``): the caller's
    ///   transaction rolls back, the counter's change with it.
    static func addUsage(_ db: Database, databaseID: Int64, _ delta: UsageDelta, quota: Int64?) throws {
        guard !delta.isZero else { return }
        try db.cachedStatement(
            sql: "UPDATE databases SET record_bytes = record_bytes + ?, asset_bytes = asset_bytes + ? WHERE id = ?"
        ).execute(arguments: [delta.recordBytes, delta.assetBytes, databaseID])
        guard quota != nil, delta.totalBytes > 0 else { return }
        if let error = try counter(db, databaseID: databaseID).exceeding(quota, grownBy: delta) { throw error }
    }

    /// The sizes of those of `hashes` the database counts: assets it holds that some record
    /// references. Measured before and after a write changes references, the difference is
    /// the write's change of ``DatabaseUsage/assetBytes``.
    static func countedAssetBytes(_ db: Database, databaseID: Int64, hashes: [String]) throws -> Int64 {
        var total: Int64 = 0
        for start in stride(from: 0, to: hashes.count, by: 500) {
            let chunk = Array(hashes[start..<min(start + 500, hashes.count)])
            total +=
                try Int64.fetchOne(
                    db,
                    sql: """
                        SELECT COALESCE(SUM(a.size), 0) FROM assets a
                        WHERE a.db = ? AND a.sha256 IN (\(databaseQuestionMarks(count: chunk.count)))
                          AND EXISTS (SELECT 1 FROM asset_refs f WHERE f.db = a.db AND f.sha256 = a.sha256)
                        """,
                    arguments: StatementArguments([databaseID] as [any DatabaseValueConvertible] + chunk)) ?? 0
        }
        return total
    }

    /// What deleting a zone changes (negative: it frees its live records' bytes, and the
    /// assets only its records reference), read before the zone's rows go.
    static func zoneDeletionDelta(_ db: Database, databaseID: Int64, zone: String) throws -> UsageDelta {
        let records =
            try Int64.fetchOne(
                db,
                sql: """
                    SELECT COALESCE(SUM(length(CAST(fields AS BLOB))), 0) FROM records
                    WHERE db = ? AND zone = ? AND deleted = 0
                    """,
                arguments: [databaseID, zone]) ?? 0
        let assets =
            try Int64.fetchOne(
                db,
                sql: """
                    SELECT COALESCE(SUM(a.size), 0) FROM assets a
                    WHERE a.db = ? AND a.sha256 IN (SELECT sha256 FROM asset_refs WHERE db = ? AND zone = ?)
                      AND NOT EXISTS (SELECT 1 FROM asset_refs f WHERE f.db = a.db AND f.sha256 = a.sha256 AND f.zone <> ?)
                    """,
                arguments: [databaseID, databaseID, zone, zone]) ?? 0
        return UsageDelta(recordBytes: -records, assetBytes: -assets)
    }
}

extension SQLiteStore: UsageStore {
    public func usage(of database: DatabaseKey) async throws -> DatabaseUsage {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else { return .empty }
            return try Self.counter(db, databaseID: dbRow.id)
        }
    }

    public func recountUsage(of database: DatabaseKey) async throws -> DatabaseUsage {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else { return .empty }
            return try Self.recountUsage(db, databaseID: dbRow.id)
        }
    }
}
