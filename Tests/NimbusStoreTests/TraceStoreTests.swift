import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// The spans of traced changes through the storage protocol, on every engine: a trace's spans
/// in time order, a span reported twice kept once, a record's traces newest first, pruning.
@Suite("Store: trace spans")
struct TraceStoreTests {
    static let trace = String(repeating: "ab", count: 16)
    static let other = String(repeating: "cd", count: 16)

    static func span(
        _ id: String, trace: String = TraceStoreTests.trace, name: String, start: Int64, records: [String] = [],
        status: TraceSpan.Status = .ok, code: String? = nil
    ) -> TraceSpan {
        TraceSpan(
            traceID: trace, spanID: id, parentSpanID: nil, name: name, source: "server test", startMicros: start,
            endMicros: start + 500, status: status, errorCode: code, message: code.map { "refused: \($0)" },
            attributes: ["zone": "Notes", "odd \"key\"": "a\nb"], recordNames: records)
    }

    @Test(arguments: Engine.available)
    func spansComeBackInTimeOrderAndByRecord(engine: Engine) async throws {
        try await engine.withStore { store in
            try await store.appendTraceSpans([
                Self.span("0000000000000002", name: "commit", start: 2_000, records: ["n1", "n2"]),
                Self.span("0000000000000001", name: "records/modify", start: 1_000, records: ["n1", "n2"], status: .error, code: "BAD_REQUEST"),
            ])
            try await store.appendTraceSpans([Self.span("0000000000000009", trace: Self.other, name: "records/changes", start: 9_000, records: ["n1"])])
            // Reported again (a device retrying its report): replaced, not doubled.
            try await store.appendTraceSpans([Self.span("0000000000000002", name: "commit", start: 2_000, records: ["n1", "n2"])])

            let spans = try await store.traceSpans(traceID: Self.trace)
            #expect(spans.map(\.name) == ["records/modify", "commit"])
            #expect(spans[0] == Self.span("0000000000000001", name: "records/modify", start: 1_000, records: ["n1", "n2"], status: .error, code: "BAD_REQUEST"))
            #expect(try await store.traceIDs(touchingRecord: "n1", limit: 10) == [Self.other, Self.trace], "newest first")
            #expect(try await store.traceIDs(touchingRecord: "n1", limit: 1) == [Self.other])
            #expect(try await store.traceIDs(touchingRecord: "n2", limit: 10) == [Self.trace])
            #expect(try await store.traceIDs(touchingRecord: "nobody", limit: 10).isEmpty)
            #expect(try await store.traceSpans(traceID: String(repeating: "0", count: 32)).isEmpty)

            #expect(try await store.pruneTraceSpans(endedBefore: 5_000) == 2)
            #expect(try await store.traceSpans(traceID: Self.trace).isEmpty)
            #expect(try await store.traceIDs(touchingRecord: "n2", limit: 10).isEmpty)
            #expect(try await store.traceSpans(traceID: Self.other).count == 1)
        }
    }

    /// A request and its commit written in one batch (the SQLite store keeps them in one row)
    /// come back as the two spans they were; record names are found exactly, whatever their
    /// case or punctuation.
    @Test(arguments: Engine.available)
    func aRequestAndItsCommitComeBackAsTwoSpansAndNamesMatchExactly(engine: Engine) async throws {
        try await engine.withStore { store in
            let request = TraceSpan(
                traceID: Self.trace, spanID: "00000000000000a1", parentSpanID: "00000000000000c0", name: "records/modify",
                source: "server n1", startMicros: 1_000, endMicros: 1_900, attributes: ["zone": "Notes"],
                recordNames: ["Note-1", "odd \"name\"", "!!!"])
            let commit = TraceSpan(
                traceID: Self.trace, spanID: "00000000000000a2", parentSpanID: "00000000000000a1", name: "commit",
                source: "server n1", startMicros: 1_200, endMicros: 1_500, status: .error, errorCode: "CONFLICT",
                message: "nothing was written", attributes: ["version": "7"])
            try await store.appendTraceSpans([commit, request])
            #expect(try await store.traceSpans(traceID: Self.trace) == [request, commit])

            #expect(try await store.traceIDs(touchingRecord: "Note-1", limit: 5) == [Self.trace])
            #expect(try await store.traceIDs(touchingRecord: "note-1", limit: 5).isEmpty, "names are case-sensitive")
            #expect(try await store.traceIDs(touchingRecord: "Note", limit: 5).isEmpty, "a part of a name is not the name")
            #expect(try await store.traceIDs(touchingRecord: "odd \"name\"", limit: 5) == [Self.trace])
            #expect(try await store.traceIDs(touchingRecord: "!!!", limit: 5) == [Self.trace])
            #expect(try await store.traceIDs(touchingRecord: "???", limit: 5).isEmpty)

            #expect(try await store.pruneTraceSpans(endedBefore: 2_000) == 2)
            #expect(try await store.traceSpans(traceID: Self.trace).isEmpty)
            #expect(try await store.traceIDs(touchingRecord: "Note-1", limit: 5).isEmpty)

            // The commit reported again on its own replaces the copy kept with the request.
            try await store.appendTraceSpans([commit, request])
            var again = commit
            again.message = "reported again"
            try await store.appendTraceSpans([again])
            #expect(try await store.traceSpans(traceID: Self.trace) == [request, again])
        }
    }
}
