import Foundation
import HTTPTypes
import Hummingbird
import NimbusServer
import NimbusStore

/// One traced change's path, hop by hop, and where it stopped: what `nimbus trace` prints,
/// found by trace ID (or a whole `traceparent`) or by record name, with that record's latest
/// traces.
enum TracePage {
    /// How many of a record's latest traces are listed.
    static let recentLimit = 10
    /// The longest query: a record name's limit.
    static let maxQueryBytes = 255
    /// Record names shown per hop.
    static let recordsPerHop = 8

    /// What the search box holds.
    enum Lookup: Equatable {
        case traceID(String)
        case recordName(String)
    }

    /// `q` read as a trace ID (32 hex digits, or a `traceparent` holding one) or a record name;
    /// a clear refusal for what can be neither.
    static func lookup(_ query: String) throws(DashboardError) -> Lookup {
        guard query.utf8.count <= maxQueryBytes else {
            throw DashboardError(
                status: .badRequest, title: "Not a trace ID or record name",
                message: "The search is \(query.utf8.count) bytes long; a trace ID is 32 hex digits and a record name "
                    + "at most \(maxQueryBytes) bytes.")
        }
        guard !query.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw DashboardError(
                status: .badRequest, title: "Not a trace ID or record name",
                message: "The search holds control characters; a trace ID is 32 hex digits and a record name has none.")
        }
        if isTraceID(query) { return .traceID(query.lowercased()) }
        let parts = query.split(separator: "-", omittingEmptySubsequences: false)
        if parts.count == 4, parts[0] == "00", isTraceID(parts[1]), parts[2].utf8.count == 16 {
            return .traceID(parts[1].lowercased())
        }
        return .recordName(query)
    }

    static func isTraceID(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 32 && text.allSatisfy(\.isHexDigit)
    }

    /// `GET /dashboard/traces[?q=<trace ID | traceparent | record name>]`.
    static func show(_ context: PageContext) async throws -> Response {
        let query = (context.argument("q") ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        var values: [String: Any] = ["title": "Traces", "q": query]
        guard !query.isEmpty else { return context.render("traces", values) }
        let lookup: Lookup
        do {
            lookup = try Self.lookup(query)
        } catch {
            values["queryError"] = error.message
            return context.render("traces", values, status: error.status)
        }
        // This node's hops ended so far are in the store before it is read.
        await context.app.server.traces.flush()
        let store = context.app.store
        var view: TraceView
        var recordName: String?
        var recent: [TraceView] = []
        switch lookup {
        case .traceID(let id):
            view = try await store.traceView(of: id)
            // A record may be named with 32 hex digits: no trace of that ID, so try the name.
            if view.hops.isEmpty, isTraceID(query) {
                (view, recent) = try await latest(touching: query, store: store)
                if !view.hops.isEmpty { recordName = query }
            }
        case .recordName(let name):
            recordName = name
            (view, recent) = try await latest(touching: name, store: store)
        }
        view = try await Self.hidingPrivateNames(view, store: store)
        recent = try await recent.asyncMap { try await Self.hidingPrivateNames($0, store: store) }
        if let name = recordName {
            // Found only through names the operator may not see: as if no trace named it, so a
            // search by name does not tell whether a private record exists.
            let names = { (view: TraceView) in view.hops.contains { $0.span.recordNames.contains(name) } }
            recent = recent.filter(names)
            if !names(view) {
                view = recent.first ?? TraceView(spans: [])
                if recent.isEmpty { recordName = nil }
            }
        }
        values["title"] = view.traceID.map { "Trace \($0)" } ?? "Traces"
        values.merge(Self.values(of: view)) { $1 }
        values["recordName"] = recordName
        values["hasRecent"] = !recent.isEmpty
        values["recent"] = recent.map { Self.summary($0, selected: $0.traceID == view.traceID) }
        return context.render("traces", values)
    }

    /// The view with the record names and messages of hops in a private or shared database
    /// left out where the container keeps operators out of users' private data (the container
    /// page's switch): hops, codes and times stay.
    static func hidingPrivateNames(_ view: TraceView, store: any NimbusStorage) async throws -> TraceView {
        var allowed: [String: Bool] = [:]
        var own: [TraceSpan] = []
        var later: [TraceSpan] = []
        for hop in view.hops {
            var span = hop.span
            let database = span.attributes["database"]
            if let container = span.attributes["container"], database == "private" || database == "shared" {
                if allowed[container] == nil {
                    allowed[container] = (try? await store.operatorsMayReadPrivateData(container: container)) ?? false
                }
                if allowed[container] == false, !span.recordNames.isEmpty || span.message != nil {
                    span.recordNames = []
                    span.message = span.message.map { _ in "(hidden: this container keeps operators out of private data)" }
                    span.attributes["refused"] = nil
                }
            }
            if hop.fromLaterTrace { later.append(span) } else { own.append(span) }
        }
        return TraceView(spans: own, later: later)
    }

    /// The record's latest traces, newest first, and the one to show: the newest that wrote
    /// it (a device's own fetch of the record is a trace too), else the newest.
    static func latest(touching name: String, store: any NimbusStorage) async throws -> (TraceView, [TraceView]) {
        var views: [TraceView] = []
        for id in try await store.traceIDs(touchingRecord: name, limit: recentLimit) {
            views.append(try await store.traceView(of: id))
        }
        let wrote = views.first { view in
            view.hops.contains { !$0.fromLaterTrace && $0.span.name == "records/modify" && $0.span.recordNames.contains(name) }
        }
        return (wrote ?? views.first ?? TraceView(spans: []), views)
    }

    /// The verdict and the hops, as the template reads them (no optionals: Mustache would
    /// print them).
    static func values(of view: TraceView) -> [String: Any] {
        let hops: [[String: Any]] = view.hops.map { hop in
            let span = hop.span
            var row: [String: Any] = [
                "offset": String(format: "%+.1f", hop.offsetMillis), "name": span.name, "source": span.source,
                "duration": Format.decimal(Double(span.endMicros - span.startMicros) / 1000),
                "status": span.status.rawValue, "failed": span.status == .error, "later": hop.fromLaterTrace,
                "shortTrace": String(span.traceID.prefix(8)) + "…", "laterQ": DashboardApp.query([("q", span.traceID)]),
                "attributes": span.attributes.sorted { $0.key < $1.key }.map { ["key": $0.key, "value": $0.value] },
                "records": span.recordNames.prefix(recordsPerHop).map { ["name": $0, "q": DashboardApp.query([("q", $0)])] },
            ]
            if let code = span.errorCode { row["code"] = code }
            if let message = span.message { row["message"] = message }
            if span.recordNames.count > recordsPerHop { row["moreRecords"] = span.recordNames.count - recordsPerHop }
            return row
        }
        var values: [String: Any] = [
            "shown": true, "stop": view.stop.rawValue, "verdict": view.verdict, "verdictClass": verdictClass(view.stop),
            "hops": hops, "hasHops": !hops.isEmpty, "noHops": hops.isEmpty, "text": view.text,
        ]
        if let traceID = view.traceID { values["traceID"] = traceID }
        return values
    }

    /// `notice` when the change arrived, `error` when it was refused or never came, `warn`
    /// while it is on its way.
    static func verdictClass(_ stop: TraceView.Stop) -> String {
        switch stop {
        case .applied: "notice"
        case .rejected, .notSent: "error"
        case .committedUnheard, .deviceOffline, .notFetched, .fetchedNotApplied: "warn"
        }
    }

    /// A row of a record's latest traces.
    static func summary(_ view: TraceView, selected: Bool) -> [String: Any] {
        let own = view.hops.filter { !$0.fromLaterTrace }.map(\.span)
        let first = own.min { $0.startMicros < $1.startMicros }
        let id = view.traceID ?? ""
        return [
            "traceID": id, "q": DashboardApp.query([("q", id)]), "selected": selected,
            "started": first.map { Format.date($0.startMicros / 1000) } ?? "",
            "firstHop": first.map { "\($0.name) · \($0.source)" } ?? "",
            "stop": view.stop.rawValue,
        ]
    }
}

extension Array {
    /// The elements transformed one after another by an async function.
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        results.reserveCapacity(count)
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
