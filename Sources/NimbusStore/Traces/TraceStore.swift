/// Where the spans of traced changes are kept, so that `nimbus trace` and the dashboard can
/// show one change's path across devices and server nodes. Spans are written in batches, off
/// the requests' path, and pruned after a retention period.
public protocol TraceStore: Sendable {
    /// Stores spans; a span already stored (same trace and span ID) is replaced.
    func appendTraceSpans(_ spans: [TraceSpan]) async throws

    /// Stores spans nobody waits for (the trace journal's periodic writes) at the lowest
    /// priority the store can give them, so the write yields the cores to requests: `make`
    /// makes them there too. By default, ``appendTraceSpans(_:)`` of what `make` makes.
    func appendTraceSpansInBackground(_ make: @escaping @Sendable () -> [TraceSpan]) async throws

    /// The spans of one trace, oldest first.
    func traceSpans(traceID: String) async throws -> [TraceSpan]

    /// The traces whose spans touched a record of this name, newest first.
    func traceIDs(touchingRecord recordName: String, limit: Int) async throws -> [String]

    /// Deletes spans that ended before `micros` (microseconds since 1970); returns how many.
    @discardableResult
    func pruneTraceSpans(endedBefore micros: Int64) async throws -> Int
}

extension TraceStore {
    public func appendTraceSpansInBackground(_ make: @escaping @Sendable () -> [TraceSpan]) async throws {
        try await appendTraceSpans(make())
    }
}
