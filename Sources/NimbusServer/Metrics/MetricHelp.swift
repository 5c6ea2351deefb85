/// The `# HELP` text of each metric `/metrics` exports: one line each, the short form of its
/// row in docs/OBSERVABILITY.md. swift-metrics carries no help text, so ``MetricsEndpoint``
/// adds these lines before each metric's `# TYPE` line.
enum MetricHelp {
    static let texts: [String: String] = [
        "nimbus_http_requests_total": "HTTP requests answered, by API operation (or route kind) and HTTP status.",
        "nimbus_http_request_duration_seconds": "Time from a request's head to its response's head, by operation.",
        "nimbus_api_errors_total":
            "API requests that failed as a whole, by CloudKit serverErrorCode (THROTTLED: rate-limited, HTTP 429).",
        "nimbus_store_errors_total":
            "Requests that failed on a non-CloudKit error (the database or the disk), answered INTERNAL_ERROR; see the log.",
        "nimbus_commits_total": "records/modify requests whose transaction committed.",
        "nimbus_records_written_total": "Records saved and deleted by committed records/modify requests.",
        "nimbus_records_read_total": "Records sent to clients, by lookup, query and the change feeds.",
        "nimbus_change_pages_total": "Pages of zone change feeds served.",
        "nimbus_notifications_created_total": "Notifications created by commits on this node (one per matching subscription).",
        "nimbus_notifications_pushed_total": "Push frames this node queued to connected devices.",
        "nimbus_push_connections": "Devices connected to this node's push channel.",
        "nimbus_push_queue_frames": "Push frames queued to connected devices and not yet written to their sockets.",
        "nimbus_asset_bytes_total": "Asset bytes received by upload URLs and sent by download URLs.",
        "nimbus_trace_spans_written_total": "Spans of traced changes written to the store.",
        "nimbus_trace_spans_dropped_total":
            "Spans of traced changes dropped because the trace journal's buffer was full (the store did not keep up).",
        "nimbus_trace_spans_exported_total":
            "Spans sent to the OpenTelemetry collector (--trace-otlp-endpoint), by outcome: sent, failed, dropped.",
        "nimbus_throttle_background_requests_total":
            "API requests run at the lowest CPU priority: their user sent more at once than it may run beside other users.",
    ]

    /// `exposition` (Prometheus text as the registry wrote it) with a `# HELP` line before each
    /// `# TYPE` line of a metric that has a text here (and no `# HELP` line of its own).
    static func adding(to exposition: [UInt8]) -> [UInt8] {
        let typePrefix = Array("# TYPE ".utf8)
        let helpPrefix = Array("# HELP ".utf8)
        var previousWasHelp = false
        var out: [UInt8] = []
        out.reserveCapacity(exposition.count + texts.count * 96)
        var lineStart = exposition.startIndex
        while lineStart < exposition.endIndex {
            let lineEnd = exposition[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? exposition.endIndex
            let line = exposition[lineStart..<lineEnd]
            if line.starts(with: typePrefix) {
                let rest = line.dropFirst(typePrefix.count)
                let name = String(decoding: rest.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if !previousWasHelp, let text = texts[name] {
                    out.append(contentsOf: Array("# HELP \(name) \(text)\n".utf8))
                }
            }
            previousWasHelp = line.starts(with: helpPrefix)
            out.append(contentsOf: line)
            if lineEnd < exposition.endIndex { out.append(UInt8(ascii: "\n")) }
            lineStart = lineEnd < exposition.endIndex ? exposition.index(after: lineEnd) : lineEnd
        }
        return out
    }
}
