import Foundation
import GRDB

extension SQLiteStore: TraceStore {
    /// The trace file of the store at `path`: `nimbus.sqlite` → `nimbus-traces.sqlite`. Spans
    /// are diagnostics: written without waiting for the disk (`synchronous = OFF`), so a power
    /// cut may lose the last ones, never a record.
    static func openTraces(besides path: String) throws -> DatabasePool {
        let base = (path as NSString).deletingPathExtension
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        let traces = try DatabasePool(path: base + "-traces.sqlite", configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-trace-spans", migrate: migrateTraceSpans)
        migrator.registerMigration("v2-trace-spans-in-order", migrate: migrateTraceSpansInOrder)
        try migrator.migrate(traces)
        return traces
    }

    /// The trace file's schema: the spans of traced changes, and which records each trace touched.
    static func migrateTraceSpans(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE trace_spans (
                    trace_id TEXT NOT NULL,
                    span_id TEXT NOT NULL,
                    parent_span_id TEXT,
                    name TEXT NOT NULL,
                    source TEXT NOT NULL,
                    start_us INTEGER NOT NULL,
                    end_us INTEGER NOT NULL,
                    status TEXT NOT NULL,
                    error_code TEXT,
                    message TEXT,
                    attributes TEXT NOT NULL,
                    record_names TEXT NOT NULL,
                    PRIMARY KEY (trace_id, span_id)
                ) WITHOUT ROWID;
                CREATE INDEX trace_spans_by_end ON trace_spans(end_us);
                CREATE TABLE trace_records (
                    record_name TEXT NOT NULL,
                    trace_id TEXT NOT NULL,
                    at_us INTEGER NOT NULL,
                    PRIMARY KEY (record_name, trace_id)
                ) WITHOUT ROWID;
                CREATE INDEX trace_records_by_time ON trace_records(at_us);
                """)
    }

    /// Spans kept in the order they are written (a rowid table) instead of by their random
    /// trace IDs: a batch of spans fills the table's last pages, and only a small index entry
    /// per span goes to a random place (the batch's write, on 2 cores, was the traced
    /// request's p99: docs/PERFORMANCE.md, "Tracing overhead").
    static func migrateTraceSpansInOrder(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE trace_spans_in_order (
                    id INTEGER PRIMARY KEY,
                    trace_id TEXT NOT NULL,
                    span_id TEXT NOT NULL,
                    parent_span_id TEXT,
                    name TEXT NOT NULL,
                    source TEXT NOT NULL,
                    start_us INTEGER NOT NULL,
                    end_us INTEGER NOT NULL,
                    status TEXT NOT NULL,
                    error_code TEXT,
                    message TEXT,
                    attributes TEXT NOT NULL,
                    record_names TEXT NOT NULL
                );
                INSERT INTO trace_spans_in_order (trace_id, span_id, parent_span_id, name, source, start_us, end_us,
                    status, error_code, message, attributes, record_names)
                    SELECT trace_id, span_id, parent_span_id, name, source, start_us, end_us, status, error_code, message,
                        attributes, record_names
                    FROM trace_spans ORDER BY end_us;
                DROP TABLE trace_spans;
                ALTER TABLE trace_spans_in_order RENAME TO trace_spans;
                CREATE UNIQUE INDEX trace_spans_by_trace ON trace_spans(trace_id, span_id);
                CREATE INDEX trace_spans_by_end ON trace_spans(end_us);
                """)
    }

    public func appendTraceSpans(_ spans: [TraceSpan]) async throws {
        guard !spans.isEmpty else { return }
        try await traces.write { db in
            let span = try db.cachedStatement(
                sql: """
                    INSERT OR REPLACE INTO trace_spans (trace_id, span_id, parent_span_id, name, source, start_us, end_us,
                        status, error_code, message, attributes, record_names)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """)
            let record = try db.cachedStatement(
                sql: """
                    INSERT INTO trace_records (record_name, trace_id, at_us) VALUES (?, ?, ?)
                    ON CONFLICT (record_name, trace_id) DO UPDATE SET at_us = max(at_us, excluded.at_us)
                    """)
            for item in spans {
                try span.execute(arguments: [
                    item.traceID, item.spanID, item.parentSpanID, item.name, item.source, item.startMicros, item.endMicros,
                    item.status.rawValue, item.errorCode, item.message, item.attributesJSON, item.recordNamesJSON,
                ])
                for name in item.recordNames {
                    try record.execute(arguments: [name, item.traceID, item.startMicros])
                }
            }
        }
    }

    public func traceSpans(traceID: String) async throws -> [TraceSpan] {
        try await traces.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT trace_id, span_id, parent_span_id, name, source, start_us, end_us, status, error_code, message,
                        attributes, record_names
                    FROM trace_spans WHERE trace_id = ? ORDER BY start_us, end_us
                    """, arguments: [traceID]
            ).map { row in
                TraceSpan(
                    traceID: row[0], spanID: row[1], parentSpanID: row[2], name: row[3], source: row[4],
                    startMicros: row[5], endMicros: row[6], status: TraceSpan.Status(rawValue: row[7]) ?? .ok,
                    errorCode: row[8], message: row[9],
                    attributes: TraceSpan.attributes(fromJSON: row[10]),
                    recordNames: TraceSpan.recordNames(fromJSON: row[11]))
            }
        }
    }

    public func traceIDs(touchingRecord recordName: String, limit: Int) async throws -> [String] {
        try await traces.read { db in
            try String.fetchAll(
                db, sql: "SELECT trace_id FROM trace_records WHERE record_name = ? ORDER BY at_us DESC LIMIT ?",
                arguments: [recordName, limit])
        }
    }

    @discardableResult
    public func pruneTraceSpans(endedBefore micros: Int64) async throws -> Int {
        try await traces.write { db in
            try db.execute(sql: "DELETE FROM trace_spans WHERE end_us < ?", arguments: [micros])
            let count = db.changesCount
            try db.execute(sql: "DELETE FROM trace_records WHERE at_us < ?", arguments: [micros])
            return count
        }
    }
}
