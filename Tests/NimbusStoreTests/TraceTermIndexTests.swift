import Foundation
import GRDB
import NimbusProtocol
import Testing

@testable import NimbusSQLite
@testable import NimbusStore

/// The SQLite trace file indexes its rows' trace IDs and record names in bulk
/// (`v4-trace-terms-in-bulk`): spans are found whether their row is indexed yet or not, and
/// the index stays true to the rows through pruning, when the next rows reuse freed IDs.
@Suite("Trace file: the term index built in bulk (SQLite)")
struct TraceTermIndexTests {
    static func request(_ number: Int, at micros: Int64) -> TraceSpan {
        TraceSpan(
            traceID: String(format: "%032x", number + 1), spanID: String(format: "%016x", number + 1), parentSpanID: nil,
            name: "records/modify", source: "server test", startMicros: micros, endMicros: micros + 100,
            attributes: ["zone": "Notes"], recordNames: ["note-\(number)"])
    }

    /// Rows up to which the index is built, and the last row.
    static func indexState(_ store: SQLiteStore) async throws -> (through: Int64, last: Int64) {
        try await store.traces.read { db in
            (try Int64.fetchOne(db, sql: SQLiteStore.indexedThrough) ?? -1,
             try Int64.fetchOne(db, sql: "SELECT coalesce(max(id), 0) FROM trace_spans") ?? -1)
        }
    }

    /// FTS5's own check that the index holds exactly the terms of the rows (it throws if not).
    static func checkIndex(_ store: SQLiteStore) async throws {
        try await store.traces.write { db in
            try db.execute(sql: "INSERT INTO trace_terms (trace_terms) VALUES ('integrity-check')")
        }
    }

    @Test func spansAreFoundBeforeAndAfterTheirRowsAreIndexed() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-trace-terms-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(directory: directory)
        defer { try? store.close() }

        // A batch and a half of requests, in writes of 100: the first batch gets indexed.
        let count = Int(SQLiteStore.termBatch) * 3 / 2
        for start in stride(from: 0, to: count, by: 100) {
            try await store.appendTraceSpans(
                (start..<min(count, start + 100)).map { Self.request($0, at: 1_000 + Int64($0)) })
        }
        let (through, last) = try await Self.indexState(store)
        #expect(through >= SQLiteStore.termBatch && through < last, "some rows indexed, the newest not yet")
        try await Self.checkIndex(store)

        for number in [0, Int(through) - 1, Int(through), count - 1] {
            let trace = String(format: "%032x", number + 1)
            #expect(try await store.traceIDs(touchingRecord: "note-\(number)", limit: 5) == [trace], "note-\(number)")
            #expect(try await store.traceSpans(traceID: trace).map(\.recordNames) == [["note-\(number)"]])
        }
        #expect(try await store.traceIDs(touchingRecord: "note-\(count)", limit: 5).isEmpty)

        // Pruning everything frees the row IDs; the next rows reuse them and must still count
        // as not indexed, and the index must not keep the pruned rows' terms.
        #expect(try await store.pruneTraceSpans(endedBefore: 1_000_000) == count)
        try await Self.checkIndex(store)
        #expect(try await store.traceIDs(touchingRecord: "note-0", limit: 5).isEmpty)
        try await store.appendTraceSpans([Self.request(7_000, at: 2_000_000)])
        #expect(try await store.traceIDs(touchingRecord: "note-7000", limit: 5) == [String(format: "%032x", 7_001)])
        for start in stride(from: 0, to: count, by: 100) {
            try await store.appendTraceSpans((start..<start + 100).map { Self.request(10_000 + $0, at: 3_000_000) })
        }
        try await Self.checkIndex(store)
        #expect(try await Self.indexState(store).through >= SQLiteStore.termBatch)
        #expect(try await store.traceIDs(touchingRecord: "note-7000", limit: 5) == [String(format: "%032x", 7_001)])
        #expect(try await store.traceIDs(touchingRecord: "note-10000", limit: 5) == [String(format: "%032x", 10_001)])
    }
}
