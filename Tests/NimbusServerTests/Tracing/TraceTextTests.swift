import HTTPTypes
import NimbusProtocol
import Testing
import W3CTraceContext

@testable import NimbusServer

/// The trace headers a request is read by, found in one pass, and IDs written as text without
/// the library's arrays: the same text as the library's.
@Suite("Trace headers and text")
struct TraceTextTests {
    @Test func idsAndTraceParentsAreTheLibrarysText() {
        var random = SplitMix64(seed: 0x7ACE)
        for flags in [TraceFlags(), .sampled, TraceFlags(rawValue: 0xAB)] {
            let trace = TraceID.random(using: &random)
            let span = SpanID.random(using: &random)
            #expect(TraceText.hex(trace) == trace.description)
            #expect(TraceText.hex(span) == span.description)
            let expected = TraceContext(traceID: trace, spanID: span, flags: flags, state: TraceState()).traceParentHeaderValue
            #expect(TraceText.traceParent(trace, span, flags: flags) == expected)
        }
    }

    @Test func oneReadingOfTheFieldsFindsParentStatesAndDevice() {
        let device = HTTPField.Name("X-Nimbus-Device-ID")!
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields.append(HTTPField(name: HTTPField.Name("TraceParent")!, value: "00-first"))
        fields.append(HTTPField(name: HTTPField.Name("traceparent")!, value: "00-second"))
        fields.append(HTTPField(name: HTTPField.Name("tracestate")!, value: "a=1"))
        fields.append(HTTPField(name: HTTPField.Name("tracestate")!, value: "b=2"))
        fields.append(HTTPField(name: HTTPField.Name("x-nimbus-device-id")!, value: "phone"))
        let headers = TraceHeaders(fields, deviceHeader: device)
        #expect(headers.traceParent == "00-first", "names are case-insensitive; the first wins")
        #expect(headers.traceState == "a=1,b=2", "several tracestate fields are one list")
        #expect(headers.deviceID == "phone")
        #expect(TraceHeadersExtractor().extract(key: "traceparent", from: headers) == "00-first")
        #expect(TraceHeadersExtractor().extract(key: "baggage", from: headers) == nil)

        var many = HTTPFields()
        for index in 0..<5_000 { many.append(HTTPField(name: HTTPField.Name("tracestate")!, value: "k\(index)=v")) }
        let capped = TraceHeaders(many, deviceHeader: device)
        #expect(capped.traceState?.split(separator: ",").count == TraceHeaders.maxTraceStateFields, "a flood of fields is not joined")

        let none = TraceHeaders(HTTPFields(), deviceHeader: device)
        #expect(none.traceParent == nil && none.traceState == nil && none.deviceID == nil)
    }
}
