import NimbusProtocol
import NimbusStore
import PostgresNIO

/// The usage counter (``DatabaseUsage``): `record_bytes` and `asset_bytes` on each row of
/// `databases` (schema version 10).
///
/// Every write changes them in its own transaction, in the `UPDATE databases` it already
/// makes under the database's row lock (``lockDatabase(_:_:bump:)``): concurrent writes of
/// one database, on any node, take turns on that lock, and each adds its change to the
/// value the previous commit left, so none is lost.
///
/// `usage_version` is the database version the counter is right at. Each write of this
/// release sets it to the version it commits; a node of an older release (nodes are replaced
/// one by one) advances `version` without touching the counter. The next write of this
/// release sees the difference and counts the database again (``recountSQL(database:)``)
/// before adding its own change, and ``usage(of:)`` answers the count meanwhile: old nodes
/// cost one recount, never a wrong quota decision.
extension PostgresStore {
    /// Schema version 10: the columns, filled by counting every database. `ALTER TABLE`
    /// holds the table's exclusive lock until the migration commits, so no write (which
    /// starts by updating its database's row) runs between the count and the commit.
    static let usageSchema = [
        """
        ALTER TABLE databases
            ADD COLUMN IF NOT EXISTS record_bytes bigint NOT NULL DEFAULT 0,
            ADD COLUMN IF NOT EXISTS asset_bytes bigint NOT NULL DEFAULT 0,
            ADD COLUMN IF NOT EXISTS usage_version bigint NOT NULL DEFAULT 0
        """,
        """
        UPDATE databases SET record_bytes = \(recountSQL(database: "databases.id").recordBytes),
            asset_bytes = \(recountSQL(database: "databases.id").assetBytes), usage_version = version
        """,
    ]

    /// A from-scratch count of the database whose id `database` is (an SQL expression), as
    /// two parenthesised scalar subqueries: the bytes of its live records' fields, and the
    /// sizes of its assets some record references (each once).
    static func recountSQL(database: String) -> (recordBytes: String, assetBytes: String) {
        (
            """
            (SELECT COALESCE(sum(octet_length(r.fields)), 0)::int8 FROM records r
                WHERE r.db = \(database) AND NOT r.deleted)
            """,
            """
            (SELECT COALESCE(sum(a.size), 0)::int8 FROM assets a WHERE a.db = \(database)
                AND EXISTS (SELECT 1 FROM asset_refs f WHERE f.db = a.db AND f.sha256 = a.sha256))
            """
        )
    }

    /// The `SET` list of a write's `UPDATE databases` (the row aliased by its own name) that
    /// commits database version `version`: the counter, counted again when an older node
    /// wrote since `expectedVersion`, plus `recordBytes` and `assetBytes` (SQL expressions,
    /// evaluated before the statement's own changes).
    static func usageAssignments(expectedVersion: String, version: String, recordBytes: String, assetBytes: String)
        -> String
    {
        let recount = recountSQL(database: "databases.id")
        return """
            usage_version = \(version),
            record_bytes = CASE WHEN usage_version = \(expectedVersion) THEN record_bytes ELSE \(recount.recordBytes) END
                + \(recordBytes),
            asset_bytes = CASE WHEN usage_version = \(expectedVersion) THEN asset_bytes ELSE \(recount.assetBytes) END
                + \(assetBytes)
            """
    }

    /// Measures the counted bytes of the assets whose references a modify changes, before it
    /// changes them: the hashes its records referenced and will reference, each with its size
    /// when the database counts it now.
    func countedAssets(
        _ transaction: Transaction, database: Int64, zone: String, records: [String], hashes: [String]
    ) async throws -> (hashes: [String], bytes: Int64) {
        var touched: [String] = []
        var bytes: Int64 = 0
        for row in try await transaction.rows(
            """
            WITH touched AS (
                SELECT sha256 FROM asset_refs WHERE db = \(database) AND zone = \(zone) AND record = ANY(\(records))
                UNION SELECT unnest(\(hashes)::text[]))
            SELECT t.sha256, COALESCE((
                SELECT a.size FROM assets a WHERE a.db = \(database) AND a.sha256 = t.sha256
                  AND EXISTS (SELECT 1 FROM asset_refs f WHERE f.db = a.db AND f.sha256 = a.sha256)), 0)::int8
            FROM touched t
            """)
        {
            let (hash, size) = try row.decode((String, Int64).self)
            touched.append(hash)
            bytes += size
        }
        return (touched, bytes)
    }

    /// Adds the change of the counted bytes of `hashes` since they were `before` to the
    /// database's counter, measuring them again now; returns the change and the counter.
    func addAssetUsage(_ transaction: Transaction, database: Int64, hashes: [String], before: Int64) async throws
        -> (assetBytes: Int64, usage: DatabaseUsage)
    {
        let rows = try await transaction.rows(
            """
            WITH counted AS (
                SELECT COALESCE(sum(a.size), 0)::int8 - \(before) AS change FROM assets a
                WHERE a.db = \(database) AND a.sha256 = ANY(\(hashes))
                  AND EXISTS (SELECT 1 FROM asset_refs f WHERE f.db = a.db AND f.sha256 = a.sha256))
            UPDATE databases SET asset_bytes = asset_bytes + counted.change FROM counted WHERE id = \(database)
            RETURNING counted.change, record_bytes, asset_bytes
            """)
        guard let row = rows.first else {
            throw PostgresStoreError(.corruptRow, "the row of database \(database) vanished during a modify")
        }
        let (change, records, assets) = try row.decode((Int64, Int64, Int64).self)
        return (change, DatabaseUsage(recordBytes: records, assetBytes: assets))
    }
}

extension PostgresStore: UsageStore {
    /// The counter, or a count when a node of an older release wrote since (see above).
    public func usage(of database: DatabaseKey) async throws -> DatabaseUsage {
        let recount = Self.recountSQL(database: "d.id")
        let rows = try await rows(
            """
            SELECT
                CASE WHEN d.usage_version = d.version THEN d.record_bytes ELSE \(unescaped: recount.recordBytes) END,
                CASE WHEN d.usage_version = d.version THEN d.asset_bytes ELSE \(unescaped: recount.assetBytes) END
            FROM databases d WHERE \(database: database)
            """)
        guard let row = rows.first else { return .empty }
        let (records, assets) = try row.decode((Int64, Int64).self)
        return DatabaseUsage(recordBytes: records, assetBytes: assets)
    }

    public func recountUsage(of database: DatabaseKey) async throws -> DatabaseUsage {
        let recount = Self.recountSQL(database: "d.id")
        let rows = try await rows(
            """
            SELECT \(unescaped: recount.recordBytes), \(unescaped: recount.assetBytes)
            FROM databases d WHERE \(database: database)
            """)
        guard let row = rows.first else { return .empty }
        let (records, assets) = try row.decode((Int64, Int64).self)
        return DatabaseUsage(recordBytes: records, assetBytes: assets)
    }
}
