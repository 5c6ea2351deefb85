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
}

/// Reads `traceparent` / `tracestate` from a request's headers.
struct HTTPFieldsExtractor: Extractor {
    static let traceParent = HTTPField.Name("traceparent")!
    static let traceState = HTTPField.Name("tracestate")!

    func extract(key: String, from carrier: HTTPFields) -> String? {
        // The two names W3C propagation reads are made once, not per request.
        switch key {
        case "traceparent": return carrier[Self.traceParent]
        case "tracestate": return carrier[Self.traceState]
        default: return HTTPField.Name(key).flatMap { carrier[$0] }
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
