import Foundation
import GRDB
import NimbusProtocol
import Testing

@testable import NimbusSQLite
@testable import NimbusStore

/// Upgrading a trace file to `v2-trace-spans-in-order` (spans kept in write order) and
/// `v3-trace-rows-and-name-index` (a request's spans in one row, names in a full-text index):
/// the spans already there stay readable and findable by record, and a span reported again is
/// still kept once.
@Suite("Trace file migration (SQLite)")
struct TraceMigrationTests {
    @Test func spansWrittenBeforeTheUpgradeAreReadAfterIt() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-trace-mig-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let trace = String(repeating: "ef", count: 16)
        do {
            let queue = try DatabaseQueue(path: directory + "/nimbus-traces.sqlite")
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1-trace-spans", migrate: SQLiteStore.migrateTraceSpans)
            try migrator.migrate(queue)
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO trace_spans (trace_id, span_id, parent_span_id, name, source, start_us, end_us, status,
                            error_code, message, attributes, record_names)
                        VALUES (?, '00f067aa0ba902b7', NULL, 'records/modify', 'server old', 10, 20, 'ok', NULL, NULL,
                            '{"zone":"Notes"}', '["note-1"]'),
                            (?, '00f067aa0ba902b8', '00f067aa0ba902b7', 'commit', 'server old', 12, 18, 'ok', NULL,
                            'committed', '{}', '[]')
                        """, arguments: [trace, trace])
            }
            try queue.close()
        }

        let store = try SQLiteStore(directory: directory)
        defer { try? store.close() }
        let spans = try await store.traceSpans(traceID: trace)
        #expect(spans.map(\.name) == ["records/modify", "commit"])
        #expect(spans.first?.attributes == ["zone": "Notes"])
        #expect(spans.first?.recordNames == ["note-1"])
        #expect(spans.last?.parentSpanID == "00f067aa0ba902b7")
        // v3 indexed the names of the spans already there.
        #expect(try await store.traceIDs(touchingRecord: "note-1", limit: 5) == [trace])

        // The same span reported again replaces the old row; a new one is added after.
        var again = spans[1]
        again.message = "committed again"
        var later = spans[1]
        later.spanID = "00f067aa0ba902b9"
        later.startMicros = 30
        later.endMicros = 40
        try await store.appendTraceSpans([again, later])
        let after = try await store.traceSpans(traceID: trace)
        #expect(after.map(\.spanID) == ["00f067aa0ba902b7", "00f067aa0ba902b8", "00f067aa0ba902b9"])
        #expect(after[1].message == "committed again")
    }
}
