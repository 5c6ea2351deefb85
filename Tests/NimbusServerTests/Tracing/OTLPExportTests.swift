import Foundation
import HTTPTypes
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `--trace-otlp-endpoint`: traced spans go to an OpenTelemetry collector as OTLP/HTTP JSON,
/// besides Nimbus's own trace store; a collector that fails costs nothing but the export.
@Suite struct OTLPExportTests {
    static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parent = "00f067aa0ba902b7"

    static func tracedModify(_ client: TestClient, zone: String, name: String) async throws -> TestClient.Reply {
        try await client.post(
            "records/modify",
            ["zoneID": ["zoneName": .string(zone)], "operations": .array([op("create", name, fields: ["n": .int(1)])])],
            headers: [("traceparent", "00-\(trace)-\(parent)-01")])
    }

    /// The server's metrics once `done` holds of them (scraped again after yielding, up to a
    /// bound: the exporter counts a batch right after its answer).
    static func metrics(of server: TestServer, until done: (MetricsScrape) -> Bool) async throws -> MetricsScrape {
        var scrape = try await MetricsScrape.of(server.server.baseURL)
        for _ in 0..<10_000 where !done(scrape) {
            await Task.yield()
            scrape = try await MetricsScrape.of(server.server.baseURL)
        }
        return scrape
    }

    @Test(arguments: Engine.available)
    func aTracedChangeReachesTheCollectorAsTheStoreHasIt(engine: Engine) async throws {
        try await FakeCollector.with { collector in
            try await TestServer.with(engine, configure: {
                $0.tracing.otlpEndpoint = collector.url + "/"
                $0.tracing.otlpHeaders = ["x-api-key": "secret-1"]
            }) { server in
                let alice = try await server.user("alice")
                #expect(try await alice.createZone("Notes").status == 200)
                #expect(try await Self.tracedModify(alice, zone: "Notes", name: "note-1").status == 200)
                await server.server.traces.flush()
                let stored = try await server.server.store.traceSpans(traceID: Self.trace)
                #expect(stored.contains { $0.name == "records/modify" })
                let exports = try await collector.wait { exports in
                    Set(exports.flatMap { $0.spans.compactMap { $0.span["spanId"]?.string } })
                        .isSuperset(of: stored.map(\.spanID))
                }
                let sent = exports.flatMap(\.spans)
                for export in exports {
                    #expect(export.headers[.init("x-api-key")!] == "secret-1")
                    #expect(export.headers[.contentType] == "application/json")
                }
                for span in stored {
                    guard let match = sent.first(where: { $0.span["spanId"]?.string == span.spanID }) else { continue }
                    #expect(match.span["traceId"]?.string == Self.trace)
                    #expect(match.span["name"]?.string == span.name)
                    #expect(match.span["parentSpanId"]?.string == span.parentSpanID)
                    #expect(match.span["startTimeUnixNano"]?.string == "\(span.startMicros)000")
                    #expect(match.resource["service.name"] == "nimbus-server")
                    // No record names leave the trace store: only how many.
                    #expect(!String(decoding: match.span.serializedBytes(), as: UTF8.self).contains("note-1"))
                }
                let request = sent.first { $0.span["name"]?.string == "records/modify" }
                #expect(request?.span["parentSpanId"]?.string == Self.parent)
                #expect(request?.span["kind"]?.int64 == 2)
                // Counted once the collector has answered.
                let scrape = try await Self.metrics(of: server) {
                    $0[#"nimbus_trace_spans_exported_total{outcome="sent"}"#] >= Double(stored.count)
                }
                #expect(scrape[#"nimbus_trace_spans_exported_total{outcome="failed"}"#] == 0)
            }
        }
    }

    @Test func aFailingCollectorCostsOnlyTheExportAndItsSpansAreCounted() async throws {
        try await FakeCollector.with { collector in
            collector.answer(.serviceUnavailable)
            try await TestServer.with(configure: { $0.tracing.otlpEndpoint = collector.url }) { server in
                let alice = try await server.user("alice")
                #expect(try await alice.createZone("Notes").status == 200)
                #expect(try await Self.tracedModify(alice, zone: "Notes", name: "a").status == 200)
                await server.server.traces.flush()
                _ = try await collector.wait { !$0.isEmpty }
                // The store still has every span, and requests are served.
                #expect(try await server.server.store.traceSpans(traceID: Self.trace).contains { $0.name == "records/modify" })
                let scrape = try await Self.metrics(of: server) {
                    $0[#"nimbus_trace_spans_exported_total{outcome="failed"}"#] > 0
                }
                #expect(scrape[#"nimbus_trace_spans_exported_total{outcome="sent"}"#] == 0)
                // Back up: the next spans go through.
                collector.answer(.ok)
                #expect(try await Self.tracedModify(alice, zone: "Notes", name: "b").status == 200)
                await server.server.traces.flush()
                _ = try await collector.wait { exports in
                    exports.contains { export in export.spans.contains { $0.span["name"]?.string == "records/modify" } }
                        && exports.count >= 2
                }
            }
        }
    }

    @Test func spansAreEncodedAsOTLPSaysFailuresAndDevicesIncluded() {
        let failed = TraceSpan(
            traceID: Self.trace, spanID: "b7ad6b7169203331", parentSpanID: Self.parent, name: "sync.apply",
            source: "device phone-1", startMicros: 1_700_000_000_000_001, endMicros: 1_700_000_000_000_000,
            status: .error, errorCode: "CONFLICT", message: "the server's value won", attributes: ["zone": "Notes"],
            recordNames: ["x", "y"])
        let body = OTLPEncoding.body([failed])
        let resource = body["resourceSpans"]?.array?.first
        #expect(FakeCollector.attributes(resource?["resource"]?["attributes"]) == [
            "service.name": "nimbus-device", "service.instance.id": "phone-1",
        ])
        let span = resource?["scopeSpans"]?.array?.first?["spans"]?.array?.first
        #expect(span?["status"]?["code"]?.int64 == 2)
        #expect(span?["status"]?["message"]?.string == "the server's value won")
        #expect(span?["kind"]?.int64 == 1)
        // An end before the start is clamped to the start.
        #expect(span?["endTimeUnixNano"]?.string == "1700000000000001000")
        #expect(FakeCollector.attributes(span?["attributes"]) == [
            "zone": "Notes", "nimbus.error_code": "CONFLICT", "nimbus.record_count": "2",
        ])
    }
}
