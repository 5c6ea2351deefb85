import Foundation
import HTTPTypes
import Instrumentation
import W3CTraceContext

/// The W3C trace context of the span the current task works in, in its `ServiceContext`.
enum TraceContextKey: ServiceContextKey {
    typealias Value = TraceContext
    static var nameOverride: String? { "nimbus-trace-context" }
}

/// The span object the current task works in, so handlers deep in a request can add facts to it.
enum CurrentSpanKey: ServiceContextKey {
    typealias Value = NimbusSpan
    static var nameOverride: String? { "nimbus-span" }
}

extension ServiceContext {
    /// The server span the current task works in, if the request is traced.
    static var currentSpan: NimbusSpan? { ServiceContext.current?[CurrentSpanKey.self] }

    /// The trace context work in this context continues: its span's, else the one a request's
    /// headers carried. (A span's context holds the span only: one key set per traced request.)
    var traceContext: TraceContext? { self[CurrentSpanKey.self]?.traceContext ?? self[TraceContextKey.self] }
}

/// The headers a traced request is read by, found in one pass over its fields: a lookup by
/// name (`fields[name]`) makes a new string of every field of that name, and a traced request
/// asked three times.
struct TraceHeaders {
    static let traceParent = HTTPField.Name("traceparent")!
    static let traceState = HTTPField.Name("tracestate")!

    var traceParent: String?
    /// Every `tracestate` field, joined with commas (W3C: several fields are one list).
    var traceState: String?
    var deviceID: String?

    /// The most `tracestate` fields read: W3C allows 32 list members in all, and a client
    /// sending thousands of fields must not make the server join them all.
    static let maxTraceStateFields = 32

    init(_ fields: HTTPFields, deviceHeader: HTTPField.Name) {
        var states: [String] = []
        for field in fields {
            if field.name == Self.traceParent {
                if traceParent == nil { traceParent = field.value }
            } else if field.name == Self.traceState {
                if states.count < Self.maxTraceStateFields { states.append(field.value) }
            } else if field.name == deviceHeader {
                if deviceID == nil { deviceID = field.value }
            }
        }
        traceState = states.isEmpty ? nil : states.joined(separator: ",")
    }
}

/// Reads `traceparent` / `tracestate` from a request's ``TraceHeaders``.
struct TraceHeadersExtractor: Extractor {
    func extract(key: String, from carrier: TraceHeaders) -> String? {
        switch key {
        case "traceparent": return carrier.traceParent
        case "tracestate": return carrier.traceState
        default: return nil
        }
    }
}

/// Writes `traceparent` / `tracestate` into headers.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        carrier[name] = value
    }
}

/// Reads the Nimbus extension `"nimbus": {"traceparent": "00-…"}` of a push payload's JSON text,
/// which the server itself wrote (``PushPayload``); the value is then parsed by W3C's rules.
enum PayloadTraceParent {
    static func traceContext(inPayload payload: String) -> TraceContext? {
        guard let marker = payload.range(of: #""traceparent":""#) else { return nil }
        let value = payload[marker.upperBound...].prefix(55)
        return try? TraceContext(traceParentHeaderValue: String(value))
    }
}
