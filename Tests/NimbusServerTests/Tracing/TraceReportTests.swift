import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `traces/report` and the `traceparent` header from clients nobody here wrote: a malformed
/// header is ignored (the request is served untraced), a malformed report is refused field by
/// field with BAD_REQUEST, reports need a user, and a well-formed one lands in the trace.
@Suite("Tracing: hostile input")
struct TraceReportTests {
    static let trace = "0af7651916cd43dd8448eb211c80319c"

    static func span(_ overrides: [String: JSON] = [:]) -> JSON {
        var span: [String: JSON] = [
            "traceparent": .string("00-\(trace)-b7ad6b7169203331-01"), "parentSpanID": "00f067aa0ba902b7",
            "name": "sync.apply", "startTime": 1_700_000_000_000, "endTime": 1_700_000_000_004, "status": "ok",
            "message": "1 applied", "attributes": ["zone": "Notes"], "recordNames": ["n1"],
        ]
        for (key, value) in overrides { span[key] = value }
        return .object(span)
    }

    @Test func aWellFormedReportLandsInTheTraceAsTheDevice() async throws {
        try await TestServer.with { server in
            let client = try await server.user("ada", device: "phone")
            let reply = try await client.post("traces/report", ["spans": [Self.span()]])
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply["accepted"]?.int64 == 1)
            // Unsampled traces are not kept.
            let unsampled = try await client.post(
                "traces/report", ["spans": [Self.span(["traceparent": .string("00-\(Self.trace)-b7ad6b7169203332-00")])]])
            #expect(unsampled["accepted"]?.int64 == 0)
            await server.server.traces.flush()
            let spans = try await server.server.store.traceSpans(traceID: Self.trace)
            #expect(spans.count == 1)
            #expect(spans.first?.source == "device phone")
            #expect(spans.first?.parentSpanID == "00f067aa0ba902b7")
            #expect(spans.first?.attributes["user"] != nil, "the reporting user is named by the server, not the body")
            #expect(spans.first?.startMicros == 1_700_000_000_000_000)
        }
    }

    @Test(arguments: [
        ("traceparent", JSON.string("00-zz-b7ad6b7169203331-01")),
        ("traceparent", JSON.string("00-00000000000000000000000000000000-b7ad6b7169203331-01")),
        ("traceparent", JSON.int(7)),
        ("parentSpanID", JSON.string("0000000000000000")),
        ("parentSpanID", JSON.string("xyz")),
        ("name", JSON.string("")),
        ("name", JSON.string(String(repeating: "n", count: 65))),
        ("startTime", JSON.int(-1)),
        ("endTime", JSON.int(1)),
        ("status", JSON.string("maybe")),
        ("message", JSON.string(String(repeating: "m", count: 1001))),
        ("attributes", JSON.object(["k": .int(1)])),
        ("attributes", JSON.object(Dictionary(uniqueKeysWithValues: (0..<33).map { ("k\($0)", JSON.string("v")) }))),
        ("recordNames", JSON.array([.string(String(repeating: "r", count: 256))])),
    ])
    func aMalformedSpanIsRefusedWithBadRequest(field: String, value: JSON) async throws {
        try await TestServer.with { server in
            let client = try await server.user("ada", device: "phone")
            let reply = try await client.post("traces/report", ["spans": [Self.span([field: value])]])
            #expect(reply.status == 400, "\(field): \(reply.text)")
            #expect(reply.serverErrorCode == "BAD_REQUEST")
            #expect(reply["reason"]?.string?.contains(field) == true, "the reason names the field: \(reply.text)")
        }
    }

    @Test func tooManySpansAndNoUserAreRefused() async throws {
        try await TestServer.with { server in
            let client = try await server.user("ada")
            let many = try await client.post("traces/report", ["spans": .array(Array(repeating: Self.span(), count: 101))])
            #expect(many.serverErrorCode == "LIMIT_EXCEEDED")
            let anonymous = try await server.anonymous().post("traces/report", ["spans": [Self.span()]])
            #expect(anonymous.status == 421 || anonymous.status == 401, "\(anonymous.text)")
        }
    }

    @Test func aMalformedTraceparentHeaderIsIgnoredAndTheRequestServed() async throws {
        try await TestServer.with { server in
            let client = try await server.user("ada")
            for header in [
                "garbage", "00-\(Self.trace)-b7ad6b7169203331", "ff-\(Self.trace)-b7ad6b7169203331-01",
                String(repeating: "0", count: 55), "00-\(Self.trace)-b7ad6b7169203331-01-extra",
                "00-\(Self.trace.uppercased())-B7AD6B7169203331-01",
            ] {
                let reply = try await client.post(
                    "zones/list", [:], headers: [("traceparent", header), ("tracestate", "=,=,")])
                #expect(reply.status == 200, "\(header): \(reply.text)")
            }
            // A sampled, well-formed one is traced.
            let reply = try await client.post(
                "zones/list", [:], headers: [("traceparent", "00-\(Self.trace)-b7ad6b7169203331-01")])
            #expect(reply.status == 200)
            await server.server.traces.flush()
            let spans = try await server.server.store.traceSpans(traceID: Self.trace)
            #expect(spans.map(\.name) == ["zones/list"])
            #expect(spans.first?.parentSpanID == "b7ad6b7169203331")
        }
    }
}
