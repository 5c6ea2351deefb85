import Foundation
import NimbusStore

/// One traced change's path, hop by hop, and where it stopped: what `nimbus trace` prints and
/// the dashboard shows. A pure function of the spans the store holds.
///
/// ```swift
/// let view = TraceView(spans: try await store.traceSpans(traceID: id), later: laterHops)
/// print(view.text)            // the hops with their times, then the verdict
/// ```
public struct TraceView: Sendable {
    /// A hop of the path, in time order.
    public struct Hop: Sendable, Equatable {
        public var span: TraceSpan
        /// Milliseconds since the first hop started.
        public var offsetMillis: Double
        /// Whether it belongs to a later trace that touched the same records (a fetch that did
        /// not come from this change's push).
        public var fromLaterTrace: Bool
    }

    /// Where the change got to.
    public enum Stop: String, Sendable, Equatable {
        case notSent = "not sent"
        case rejected
        case committedUnheard = "committed, no subscription matched"
        case deviceOffline = "pushed, no device connected"
        case notFetched = "pushed, not fetched yet"
        case fetchedNotApplied = "fetched, apply not reported"
        case applied
    }

    public var traceID: String?
    public var hops: [Hop]
    public var stop: Stop
    /// The verdict in words.
    public var verdict: String

    /// - Parameters:
    ///   - spans: the trace's spans.
    ///   - later: spans of other traces that touched the trace's records after it (fetches and
    ///     applies of devices that fetched without this change's push).
    public init(spans: [TraceSpan], later: [TraceSpan] = []) {
        traceID = spans.first?.traceID
        let first = (spans + later).map(\.startMicros).min() ?? 0
        let own = Set(spans.map(\.spanID))
        hops = (spans + later).sorted { ($0.startMicros, $0.endMicros) < ($1.startMicros, $1.endMicros) }.map {
            Hop(span: $0, offsetMillis: Double($0.startMicros - first) / 1000, fromLaterTrace: !own.contains($0.spanID))
        }
        (stop, verdict) = Self.verdict(spans + later)
    }

    static let fetchNames: Set<String> = ["records/changes", "changes/zone", "zones/changes"]

    static func verdict(_ spans: [TraceSpan]) -> (Stop, String) {
        guard !spans.isEmpty else {
            return (
                .notSent,
                "the server has no hop of this change: it was not sent yet (it waits in a device's outbox — see "
                    + "`engine.diagnostics()` or `reading-list status` there), or the trace is older than the retention"
            )
        }
        let writes = spans.filter { $0.name == "records/modify" }
        if let refused = writes.first(where: { $0.status == .error }) {
            return (
                .rejected,
                "rejected with \(refused.errorCode ?? "an error"): \(refused.message ?? "see the hop above")")
        }
        let commits = spans.filter { $0.name == "commit" }
        if let failed = commits.first(where: { $0.status == .error }) {
            return (.rejected, "not committed (\(failed.errorCode ?? "error")): \(failed.message ?? "")")
        }
        // The device that made the change fetching its own echo is no delivery.
        let writers = Set(writes.compactMap { $0.attributes["device"].map { "device \($0)" } })
        let others = spans.filter { !writers.contains(Self.device($0)) }
        let applies = others.filter { $0.name == "sync.apply" }
        if !applies.isEmpty {
            let lines = applies.map { "\(Self.device($0)): \($0.message ?? "applied")" }
            return (.applied, "applied — " + lines.joined(separator: "; "))
        }
        let fetches = others.filter { fetchNames.contains($0.name) && !$0.recordNames.isEmpty }
        if !fetches.isEmpty {
            let devices = Set(fetches.map(Self.device)).sorted().joined(separator: ", ")
            return (
                .fetchedNotApplied,
                "fetched by \(devices); the device reported no apply (its engine does not trace, or the report "
                    + "has not arrived)")
        }
        let pushes = spans.filter { $0.name == "push" }
        if !pushes.isEmpty {
            let sent = pushes.filter { ($0.attributes["devices"].flatMap(Int.init) ?? 0) > 0 }
            if sent.isEmpty {
                return (
                    .deviceOffline,
                    "committed and notified, but no device of the recipient was connected: the notification waits "
                        + "in the collection; a device sees the change when it connects or fetches")
            }
            let devices = Set(sent.compactMap { $0.attributes["sent_to"] }).sorted().joined(separator: ", ")
            return (.notFetched, "pushed to \(devices); no device has fetched the change yet")
        }
        if let commit = commits.first, commit.attributes["notifications"] == "0" {
            return (
                .committedUnheard,
                "committed, but no subscription matched: no device was notified (devices see the change on their "
                    + "next fetch; check the subscriptions with `subscriptions/list`)")
        }
        if !commits.isEmpty {
            return (.deviceOffline, "committed; no push was recorded (the delivering node does not trace)")
        }
        return (.notSent, "the server recorded requests of this trace but no write")
    }

    static func device(_ span: TraceSpan) -> String {
        if span.source.hasPrefix("device ") { return span.source }
        return span.attributes["device"].map { "device \($0)" } ?? span.source
    }

    /// The path as text: one line per hop, then the verdict.
    public var text: String {
        var lines: [String] = []
        if let traceID { lines.append("trace \(traceID)") }
        for hop in hops {
            let span = hop.span
            let duration = Double(span.endMicros - span.startMicros) / 1000
            var line = String(format: "%+10.1f ms  %-16@ %7.1f ms  %@", hop.offsetMillis, span.name as NSString, duration, span.source as NSString)
            if span.status == .error { line += "  ERROR \(span.errorCode ?? "")" }
            if hop.fromLaterTrace { line += "  (trace \(span.traceID))" }
            lines.append(line)
            if let message = span.message { lines.append("              \(message)") }
            let facts = span.attributes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            if !facts.isEmpty { lines.append("              " + facts.joined(separator: " ")) }
            if !span.recordNames.isEmpty {
                let shown = span.recordNames.prefix(8).joined(separator: ", ")
                lines.append("              records: \(shown)" + (span.recordNames.count > 8 ? ", …" : ""))
            }
        }
        lines.append("where it stopped: \(stop.rawValue) — \(verdict)")
        return lines.joined(separator: "\n")
    }
}

extension TraceStore {
    /// The view of a trace (a 32-hex trace ID) or of the latest trace that touched a record of
    /// this name, with the later fetches and applies of its records by devices that fetched
    /// without its push.
    public func traceView(of idOrRecordName: String) async throws -> TraceView {
        var traceID = idOrRecordName.lowercased()
        let isTraceID = traceID.utf8.count == 32 && traceID.allSatisfy(\.isHexDigit)
        if !isTraceID {
            guard let latest = try await traceIDs(touchingRecord: idOrRecordName, limit: 1).first else {
                return TraceView(spans: [])
            }
            traceID = latest
        }
        let spans = try await traceSpans(traceID: traceID)
        let written = Set(spans.filter { $0.name == "records/modify" }.flatMap(\.recordNames))
        let since = spans.filter { $0.name == "commit" }.map(\.endMicros).max() ?? .max
        var later: [TraceSpan] = []
        var seen = Set([traceID])
        for name in written.sorted().prefix(20) {
            for other in try await traceIDs(touchingRecord: name, limit: 10) where seen.insert(other).inserted {
                later += try await traceSpans(traceID: other).filter {
                    $0.startMicros >= since && (TraceView.fetchNames.contains($0.name) || $0.name == "sync.apply")
                        && !$0.recordNames.filter(written.contains).isEmpty
                }
            }
        }
        return TraceView(spans: spans, later: later)
    }
}
