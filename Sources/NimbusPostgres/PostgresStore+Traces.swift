import NimbusStore
import PostgresNIO

extension PostgresStore: TraceStore {
    /// Schema 15: the spans of traced changes and which records each trace touched, as SQLite's
    /// "v13-trace-spans". Re-runnable.
    static let traceSpansMigration = Migration(
        version: 15,
        statements: [
            """
            CREATE TABLE IF NOT EXISTS trace_spans (
                trace_id text COLLATE "C" NOT NULL,
                span_id text COLLATE "C" NOT NULL,
                parent_span_id text,
                name text NOT NULL,
                source text NOT NULL,
                start_us bigint NOT NULL,
                end_us bigint NOT NULL,
                status text NOT NULL,
                error_code text,
                message text,
                attributes text NOT NULL,
                record_names text NOT NULL,
                PRIMARY KEY (trace_id, span_id)
            )
            """,
            "CREATE INDEX IF NOT EXISTS trace_spans_by_end ON trace_spans (end_us)",
            """
            CREATE TABLE IF NOT EXISTS trace_records (
                record_name text COLLATE "C" NOT NULL,
                trace_id text COLLATE "C" NOT NULL,
                at_us bigint NOT NULL,
                PRIMARY KEY (record_name, trace_id)
            )
            """,
            "CREATE INDEX IF NOT EXISTS trace_records_by_time ON trace_records (at_us)",
        ])

    public func appendTraceSpans(_ spans: [TraceSpan]) async throws {
        guard !spans.isEmpty else { return }
        try await transaction { transaction in
            for span in spans {
                try await transaction.rows(
                    """
                    INSERT INTO trace_spans (trace_id, span_id, parent_span_id, name, source, start_us, end_us, status,
                        error_code, message, attributes, record_names)
                    VALUES (\(span.traceID), \(span.spanID), \(span.parentSpanID), \(span.name), \(span.source),
                        \(span.startMicros), \(span.endMicros), \(span.status.rawValue), \(span.errorCode), \(span.message),
                        \(span.attributesJSON), \(span.recordNamesJSON))
                    ON CONFLICT (trace_id, span_id) DO UPDATE SET parent_span_id = EXCLUDED.parent_span_id,
                        name = EXCLUDED.name, source = EXCLUDED.source, start_us = EXCLUDED.start_us,
                        end_us = EXCLUDED.end_us, status = EXCLUDED.status, error_code = EXCLUDED.error_code,
                        message = EXCLUDED.message, attributes = EXCLUDED.attributes, record_names = EXCLUDED.record_names
                    """)
                guard !span.recordNames.isEmpty else { continue }
                try await transaction.rows(
                    """
                    INSERT INTO trace_records (record_name, trace_id, at_us)
                    SELECT name, \(span.traceID), \(span.startMicros) FROM unnest(\(span.recordNames)::text[]) AS name
                    ON CONFLICT (record_name, trace_id) DO UPDATE SET at_us = greatest(trace_records.at_us, EXCLUDED.at_us)
                    """)
            }
        }
    }

    public func traceSpans(traceID: String) async throws -> [TraceSpan] {
        try await rows(
            """
            SELECT trace_id, span_id, parent_span_id, name, source, start_us, end_us, status, error_code, message,
                attributes, record_names
            FROM trace_spans WHERE trace_id = \(traceID) ORDER BY start_us, end_us
            """
        ).map { row in
            let (trace, span, parent, name, source, start, end, status, code, message, attributes, records) =
                try row.decode(
                    (String, String, String?, String, String, Int64, Int64, String, String?, String?, String, String).self)
            return TraceSpan(
                traceID: trace, spanID: span, parentSpanID: parent, name: name, source: source, startMicros: start,
                endMicros: end, status: TraceSpan.Status(rawValue: status) ?? .ok, errorCode: code, message: message,
                attributes: TraceSpan.attributes(fromJSON: attributes),
                recordNames: TraceSpan.recordNames(fromJSON: records))
        }
    }

    public func traceIDs(touchingRecord recordName: String, limit: Int) async throws -> [String] {
        try await rows(
            """
            SELECT trace_id FROM trace_records WHERE record_name = \(recordName) ORDER BY at_us DESC LIMIT \(Int64(limit))
            """
        ).map { try $0.decode(String.self) }
    }

    @discardableResult
    public func pruneTraceSpans(endedBefore micros: Int64) async throws -> Int {
        try await transaction { transaction in
            let deleted = try await transaction.rows("DELETE FROM trace_spans WHERE end_us < \(micros) RETURNING 1")
            try await transaction.rows("DELETE FROM trace_records WHERE at_us < \(micros)")
            return deleted.count
        }
    }
}
