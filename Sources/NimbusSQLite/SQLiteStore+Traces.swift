import Foundation
import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: TraceStore {
    /// The trace file of the store at `path`: `nimbus.sqlite` → `nimbus-traces.sqlite`. Spans
    /// are diagnostics: written without waiting for the disk (`synchronous = OFF`), so a power
    /// cut may lose the last ones, never a record.
    static func openTraces(besides path: String) throws -> DatabasePool {
        let base = (path as NSString).deletingPathExtension
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let traces = try DatabasePool(path: base + "-traces.sqlite", configuration: configuration)
        // After the pool's own set-up, which puts its writer in WAL mode with `synchronous =
        // NORMAL` (and would override this in `prepareDatabase`): with NORMAL, every checkpoint
        // of the trace file waited for the disk twice (docs/PERFORMANCE.md, "Tracing overhead").
        try traces.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-trace-spans", migrate: migrateTraceSpans)
        migrator.registerMigration("v2-trace-spans-in-order", migrate: migrateTraceSpansInOrder)
        migrator.registerMigration("v3-trace-rows-and-term-index", migrate: migrateTraceRowsAndTermIndex)
        migrator.registerMigration("v4-trace-terms-in-bulk", migrate: migrateTraceTermsInBulk)
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

    /// Rows that only ever go at the end: a request's spans in one row, and the trace ID and
    /// record names in a full-text index instead of B-tree indexes.
    ///
    /// - `children`: a span whose parent is in the same write, from the same source, and that
    ///   names no records (a request's `commit`) is kept in its parent's row, as JSON.
    /// - `trace_terms`: an FTS5 index over `trace_spans.trace_id` and `.record_names` (external
    ///   content). It replaces the unique (trace ID, span ID) index and
    ///   `trace_records`, whose entries each went to a random page: FTS5 writes a transaction's
    ///   terms as one new segment, and merges segments later in bulk.
    /// - Without the unique index a span reported again is a second row; readers keep the
    ///   latest row of each span ID.
    /// - ``appendTraceSpans(_:)`` indexes the rows it writes itself (in bulk since
    ///   ``migrateTraceTermsInBulk(_:)``): an insert trigger made each row's terms a segment of
    ///   their own (FTS5 flushes at each trigger's statement), which cost more than twice the
    ///   rest of the write. Triggers keep the index right when rows are deleted (pruning) or
    ///   changed.
    ///
    /// Measured with `nimbus-bench trace-store` (docs/PERFORMANCE.md, "Tracing overhead").
    static func migrateTraceRowsAndTermIndex(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE trace_spans ADD COLUMN children TEXT;
                DROP TABLE trace_records;
                DROP INDEX trace_spans_by_trace;
                CREATE VIRTUAL TABLE trace_terms USING fts5(
                    trace_id, record_names, content = 'trace_spans', content_rowid = 'id', columnsize = 0,
                    tokenize = "unicode61 tokenchars '-_.:@'");
                INSERT INTO trace_terms (trace_terms) VALUES ('rebuild');
                CREATE TRIGGER trace_terms_delete AFTER DELETE ON trace_spans BEGIN
                    INSERT INTO trace_terms (trace_terms, rowid, trace_id, record_names)
                        VALUES ('delete', old.id, old.trace_id, old.record_names);
                END;
                CREATE TRIGGER trace_terms_update AFTER UPDATE OF trace_id, record_names ON trace_spans BEGIN
                    INSERT INTO trace_terms (trace_terms, rowid, trace_id, record_names)
                        VALUES ('delete', old.id, old.trace_id, old.record_names);
                    INSERT INTO trace_terms (rowid, trace_id, record_names) VALUES (new.id, new.trace_id, new.record_names);
                END;
                """)
    }

    /// Rows indexed in `trace_terms` in one go once this many are waiting
    /// (``migrateTraceTermsInBulk(_:)``): about a second of single-record requests at full speed.
    static let termBatch: Int64 = 1_000

    /// The trace file's term index covers the rows up to this one; later rows are read by a scan.
    static let indexedThrough = "SELECT row_id FROM trace_terms_through"

    /// The term index indexes its rows in bulk, not at each write: one transaction's FTS5
    /// segment cost about half of a journal write of 18 requests (a segment's fixed cost,
    /// whatever its size). ``appendTraceSpans(_:)`` indexes the rows after `trace_terms_through`
    /// once ``termBatch`` of them wait; readers scan those rows (at most a batch and a write).
    static func migrateTraceTermsInBulk(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE trace_terms_through (row_id INTEGER NOT NULL);
                INSERT INTO trace_terms_through VALUES ((SELECT coalesce(max(id), 0) FROM trace_spans));
                """)
    }

    public func appendTraceSpans(_ spans: [TraceSpan]) async throws {
        guard !spans.isEmpty else { return }
        let rows = TraceSpanRows.rows(of: spans)
        try await traces.write { db in try Self.insert(rows, into: db) }
    }

    /// On ``traceWriter``, a thread under `SCHED_IDLE`: making the spans and their rows, SQLite's
    /// work, its commit and its checkpoints wait while requests need the cores.
    public func appendTraceSpansInBackground(_ make: @escaping @Sendable () -> [TraceSpan]) async throws {
        let traces = traces
        try await traceWriter.run {
            let spans = make()
            guard !spans.isEmpty else { return }
            let rows = TraceSpanRows.rows(of: spans)
            try traces.write { db in try Self.insert(rows, into: db) }
        }
    }

    /// Appends the rows, and indexes the rows not indexed yet once ``termBatch`` of them wait.
    static func insert(_ rows: [TraceSpanRows], into db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO trace_spans (trace_id, span_id, parent_span_id, name, source, start_us, end_us,
                    status, error_code, message, attributes, record_names, children)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for row in rows {
            let item = row.span
            try statement.execute(arguments: [
                item.traceID, item.spanID, item.parentSpanID, item.name, item.source, item.startMicros, item.endMicros,
                item.status.rawValue, item.errorCode, item.message, item.attributesJSON, item.recordNamesJSON,
                row.childrenJSON,
            ])
        }
        let through = try Int64.fetchOne(db.cachedStatement(sql: indexedThrough)) ?? 0
        if db.lastInsertedRowID - through >= termBatch { try indexTerms(db) }
    }

    /// Indexes the rows written since the last time, in one FTS5 segment.
    static func indexTerms(_ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO trace_terms (rowid, trace_id, record_names)
                    SELECT id, trace_id, record_names FROM trace_spans WHERE id > (\(indexedThrough));
                UPDATE trace_terms_through SET row_id = (SELECT coalesce(max(id), 0) FROM trace_spans);
                """)
    }

    public func traceSpans(traceID: String) async throws -> [TraceSpan] {
        try await traces.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT trace_id, span_id, parent_span_id, name, source, start_us, end_us, status, error_code, message,
                        attributes, record_names, children
                    FROM trace_spans WHERE id IN (
                        SELECT rowid FROM trace_terms WHERE trace_terms MATCH :term
                        UNION ALL
                        SELECT id FROM trace_spans WHERE id > (\(Self.indexedThrough)) AND trace_id = :trace)
                    ORDER BY id
                    """, arguments: ["term": Self.term(traceID, column: "trace_id"), "trace": traceID])
            // The latest row of each span wins (a span reported again is a row of its own); a
            // span nested in its parent's row counts as written with it.
            var spans: [String: TraceSpan] = [:]
            for row in rows where (row[0] as String) == traceID {
                let span = TraceSpan(
                    traceID: row[0], spanID: row[1], parentSpanID: row[2], name: row[3], source: row[4],
                    startMicros: row[5], endMicros: row[6], status: TraceSpan.Status(rawValue: row[7]) ?? .ok,
                    errorCode: row[8], message: row[9],
                    attributes: TraceSpan.attributes(fromJSON: row[10]),
                    recordNames: TraceSpan.recordNames(fromJSON: row[11]))
                if let children = row[12] as String? {
                    for child in TraceSpanRows.children(fromJSON: children, of: span) { spans[child.spanID] = child }
                }
                spans[span.spanID] = span
            }
            return spans.values.sorted {
                ($0.startMicros, $0.endMicros, $0.spanID) < ($1.startMicros, $1.endMicros, $1.spanID)
            }
        }
    }

    /// An FTS5 query for the phrase of `text`'s tokens in one column (the tokenizer folds case
    /// and punctuation: callers check candidates for the exact value).
    private static func term(_ text: String, column: String) -> String {
        "\(column) : \"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    public func traceIDs(touchingRecord recordName: String, limit: Int) async throws -> [String] {
        guard limit > 0 else { return [] }
        return try await traces.read { db in
            // A name with a word character: the phrase of its tokens in the term index finds
            // candidates (case and punctuation folded), and the rows not indexed yet are scanned.
            // Without one, it makes no phrase: scan.
            let hasWords = recordName.unicodeScalars.contains {
                $0.properties.isAlphabetic || $0.properties.numericType != nil || "-_.:@".unicodeScalars.contains($0)
            }
            let candidates =
                hasWords
                ? """
                    SELECT rowid FROM trace_terms WHERE trace_terms MATCH :phrase
                    UNION ALL
                    SELECT id FROM trace_spans WHERE id > (\(Self.indexedThrough)) AND instr(record_names, :quoted) > 0
                    """
                : "SELECT id FROM trace_spans WHERE instr(record_names, :quoted) > 0"
            // Each candidate checked for the exact name; a trace's time is its latest span's.
            return try String.fetchAll(
                db,
                sql: """
                    SELECT trace_id FROM trace_spans
                    WHERE id IN (\(candidates))
                      AND EXISTS (SELECT 1 FROM json_each(trace_spans.record_names) WHERE value = :name)
                    GROUP BY trace_id ORDER BY max(start_us) DESC LIMIT :limit
                    """,
                arguments: [
                    "phrase": Self.term(recordName, column: "record_names"),
                    "quoted": JSON.string(recordName).serialized(), "name": recordName, "limit": limit,
                ])
        }
    }

    @discardableResult
    public func pruneTraceSpans(endedBefore micros: Int64) async throws -> Int {
        try await traces.write { db in
            // Spans, not rows: a span reported twice is two rows, a commit rides in its request's.
            let spans =
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT (SELECT count(*) FROM (SELECT DISTINCT trace_id, span_id FROM trace_spans WHERE end_us < ?1))
                            + (SELECT coalesce(sum(json_array_length(children)), 0) FROM trace_spans
                               WHERE end_us < ?1 AND children IS NOT NULL)
                        """, arguments: [micros]) ?? 0
            // Every row indexed first: the delete trigger takes a row's terms out of the index.
            try Self.indexTerms(db)
            try db.execute(sql: "DELETE FROM trace_spans WHERE end_us < ?", arguments: [micros])
            // Rows deleted at the end free their IDs for the next ones, which must count as new.
            try db.execute(sql: "UPDATE trace_terms_through SET row_id = (SELECT coalesce(max(id), 0) FROM trace_spans)")
            return spans
        }
    }
}
