import NimbusProtocol
import NimbusStore

/// Spans as the body of an OTLP/HTTP export (`POST /v1/traces`, `Content-Type:
/// application/json`), in the JSON mapping of OpenTelemetry's `ExportTraceServiceRequest`:
/// one `resourceSpans` entry per source (this server's node, or a device whose SDK reported
/// its hops), trace and span IDs as hex, times as decimal strings of nanoseconds.
///
/// What a span carries: its name, times, parent, status (`ERROR` with the message when the hop
/// failed), its attributes, `nimbus.error_code` and `nimbus.record_count`. Record names stay
/// in Nimbus's own trace store (`nimbus trace <record>`): a collector is run by operators who
/// may not read private databases.
package enum OTLPEncoding {
    /// The instrumentation scope of every span.
    package static let scope = "nimbus"

    package static func body(_ spans: [TraceSpan]) -> JSON {
        var order: [String] = []
        var bySource: [String: [JSON]] = [:]
        for span in spans {
            if bySource[span.source] == nil { order.append(span.source) }
            bySource[span.source, default: []].append(encode(span))
        }
        return .object([
            "resourceSpans": .array(
                order.map { source in
                    .object([
                        "resource": .object(["attributes": attributes(resourceAttributes(of: source))]),
                        "scopeSpans": .array([
                            .object(["scope": .object(["name": .string(scope)]), "spans": .array(bySource[source] ?? [])])
                        ]),
                    ])
                })
        ])
    }

    /// `service.name` (`nimbus-server`, or `nimbus-device` for a device's hops) and who
    /// recorded the spans: `service.instance.id`, the node or device.
    static func resourceAttributes(of source: String) -> [String: String] {
        if source.hasPrefix("device ") {
            return ["service.name": "nimbus-device", "service.instance.id": String(source.dropFirst("device ".count))]
        }
        let node = source.hasPrefix("server ") ? String(source.dropFirst("server ".count)) : source
        return ["service.name": "nimbus-server", "service.instance.id": node]
    }

    static func encode(_ span: TraceSpan) -> JSON {
        var facts = span.attributes
        if let code = span.errorCode { facts["nimbus.error_code"] = code }
        if !span.recordNames.isEmpty { facts["nimbus.record_count"] = String(span.recordNames.count) }
        var members: [String: JSON] = [
            "traceId": .string(span.traceID),
            "spanId": .string(span.spanID),
            "name": .string(span.name),
            // SPAN_KIND_SERVER for a request the server answered, INTERNAL for the other hops.
            "kind": .number(span.attributes["http.status"] != nil ? "2" : "1"),
            "startTimeUnixNano": .string(nanos(span.startMicros)),
            "endTimeUnixNano": .string(nanos(max(span.startMicros, span.endMicros))),
            "attributes": attributes(facts),
        ]
        if let parent = span.parentSpanID { members["parentSpanId"] = .string(parent) }
        switch span.status {
        case .ok: members["status"] = .object([:])  // STATUS_CODE_UNSET
        case .error:
            var status: [String: JSON] = ["code": .number("2")]  // STATUS_CODE_ERROR
            if let message = span.message { status["message"] = .string(message) }
            members["status"] = .object(status)
        }
        return .object(members)
    }

    /// OTLP's list of key-value pairs, sorted by key (string values).
    static func attributes(_ facts: [String: String]) -> JSON {
        .array(
            facts.keys.sorted().map { key in
                .object(["key": .string(key), "value": .object(["stringValue": .string(facts[key] ?? "")])])
            })
    }

    /// Microseconds as OTLP's decimal string of nanoseconds.
    static func nanos(_ micros: Int64) -> String {
        micros <= 0 ? "0" : String(micros) + "000"
    }
}
