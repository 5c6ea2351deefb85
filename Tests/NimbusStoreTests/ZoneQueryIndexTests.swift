import Foundation
import GRDB
import NimbusProtocol
import Testing

@testable import NimbusSQLite
@testable import NimbusStore

/// A query in one zone reads the query index in zone order (`v13-zone-query-indexes`), so it
/// never passes over the entries of the database's other zones; a query over every zone
/// reads the index in value order, as the results come.
@Suite("Query indexes in zone order (SQLite)")
struct ZoneQueryIndexTests {
    static func plan(of scan: IndexScan, range: IndexRange) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-zone-index-\(UUID()).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let queue = try DatabaseQueue(path: path)
        try SQLiteStore.migrator.migrate(queue)
        let (sql, arguments) = SQLiteStore.valuesScan(database: 1, scan: scan, index: "due", range: range)
        return try queue.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments)
                .map { $0["detail"] as String }.joined(separator: "\n")
        }
    }

    static func scan(zone: String?, after: IndexPosition? = nil, descending: Bool = false) -> IndexScan {
        IndexScan(
            recordType: "Note", zone: zone, source: .values(index: "due", range: .all), descending: descending, after: after,
            limit: 200)
    }

    static let ranges: [IndexRange] = [
        .all, .equal(.integer(3)), IndexRange(lower: .init(.integer(1_790_000_000_000), inclusive: false)),
    ]

    @Test(arguments: ranges)
    func aZonesQueryReadsItsOwnEntriesInResultOrder(range: IndexRange) throws {
        let plan = try Self.plan(of: Self.scan(zone: "g0"), range: range)
        #expect(plan.contains("record_values_by_zone (db=? AND type=? AND field=? AND zone=?"), "\(plan)")
        // The index's order is the result order: nothing is sorted afterwards.
        #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
    }

    /// A later page starts where the last one ended, inside the index: it does not read the
    /// zone's entries from the first again.
    @Test(arguments: [false, true])
    func aZonesLaterPageStartsInsideTheIndex(descending: Bool) throws {
        let after = IndexPosition(key: .integer(7), recordName: "b7", zone: "g0")
        let plan = try Self.plan(of: Self.scan(zone: "g0", after: after, descending: descending), range: .all)
        #expect(plan.contains("record_values_by_zone (db=? AND type=? AND field=? AND zone=? AND (value,name)"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
    }

    @Test(arguments: ranges)
    func aQueryOverEveryZoneReadsTheValueOrder(range: IndexRange) throws {
        let plan = try Self.plan(of: Self.scan(zone: nil), range: range)
        #expect(plan.contains("SEARCH v USING PRIMARY KEY (db=? AND type=? AND field=?"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
    }
}
