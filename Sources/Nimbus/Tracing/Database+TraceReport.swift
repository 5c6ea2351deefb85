import Foundation
import NimbusProtocol

/// A hop of a traced change that only the device saw — how its sync engine applied a fetched
/// change, an app's own step — reported to the server with ``Database/reportTraceSpans(_:)``
/// so that `nimbus trace` shows it beside the server's hops.
public struct TraceSpanReport: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable {
        case ok
        case error
    }

    /// The span itself: its trace and its own span ID.
    public var trace: RequestTrace
    /// The hop that caused it (a fetch request's span, a push's commit), 16 hex digits.
    public var parentSpanID: String?
    /// What the hop was (`sync.apply`, `ui.shown`…), at most 64 bytes.
    public var name: String
    public var start: Date
    public var end: Date
    public var status: Status
    /// A CloudKit `serverErrorCode` when the hop failed.
    public var errorCode: String?
    /// What happened, in words: no record contents, no tokens.
    public var message: String?
    /// At most 32 small facts.
    public var attributes: [String: String]
    /// The records the hop touched (at most 400).
    public var recordNames: [String]

    public init(
        trace: RequestTrace, parentSpanID: String? = nil, name: String, start: Date, end: Date, status: Status = .ok,
        errorCode: String? = nil, message: String? = nil, attributes: [String: String] = [:], recordNames: [String] = []
    ) {
        self.trace = trace
        self.parentSpanID = parentSpanID
        self.name = name
        self.start = start
        self.end = end
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.attributes = attributes
        self.recordNames = recordNames
    }

    var wireJSON: JSON {
        var object: [String: JSON] = [
            "traceparent": .string(trace.traceParent), "name": .string(name),
            "startTime": .int(Int64((start.timeIntervalSince1970 * 1000).rounded(.down))),
            "endTime": .int(Int64((end.timeIntervalSince1970 * 1000).rounded(.up))), "status": .string(status.rawValue),
            "attributes": .object(attributes.mapValues { .string($0) }),
            "recordNames": .array(recordNames.map { .string($0) }),
        ]
        if let parentSpanID { object["parentSpanID"] = .string(parentSpanID) }
        if let errorCode { object["errorCode"] = .string(errorCode) }
        if let message { object["message"] = .string(message) }
        return .object(object)
    }
}

extension Database {
    /// Adds a device's hops to the traces the server records (`traces/report`, a Nimbus
    /// extension). Returns how many spans the server kept (none when it does not trace).
    ///
    /// ```swift
    /// let hop = TraceSpanReport(trace: trace.child(), parentSpanID: trace.spanID, name: "ui.shown",
    ///                           start: shownAt, end: .now, recordNames: [note.recordName])
    /// try await container.privateCloudDatabase.reportTraceSpans([hop])
    /// ```
    @discardableResult
    public func reportTraceSpans(_ spans: [TraceSpanReport]) async throws -> Int {
        guard !spans.isEmpty else { return 0 }
        let response = try await send("traces/report", body: .object(["spans": .array(spans.map(\.wireJSON))]))
        return Int(response["accepted"]?.int64 ?? 0)
    }
}
