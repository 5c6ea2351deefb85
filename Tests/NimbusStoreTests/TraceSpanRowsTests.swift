import NimbusStore
import Testing

/// Which spans of a batch share a row in the SQLite trace file: a child that names no records,
/// from its parent's source, rides in its parent's row; nothing else does.
@Suite("Trace span rows")
struct TraceSpanRowsTests {
    static func span(
        _ id: String, parent: String? = nil, source: String = "server n1", names: [String] = [], trace: String = "t"
    ) -> TraceSpan {
        TraceSpan(
            traceID: trace, spanID: id, parentSpanID: parent, name: id, source: source, startMicros: 1, endMicros: 2,
            recordNames: names)
    }

    @Test func aRequestsCommitRidesInItsRow() {
        let rows = TraceSpanRows.rows(of: [Self.span("commit", parent: "request"), Self.span("request", parent: "client")])
        #expect(rows == [TraceSpanRows(span: Self.span("request", parent: "client"), children: [Self.span("commit", parent: "request")])])
        let decoded = TraceSpanRows.children(fromJSON: rows[0].childrenJSON ?? "", of: rows[0].span)
        #expect(decoded == [Self.span("commit", parent: "request")])
    }

    @Test func childrenWithNamesOtherSourcesOrOtherBatchesKeepTheirRows() {
        let spans = [
            Self.span("request"),
            Self.span("named", parent: "request", names: ["r1"]),
            Self.span("device", parent: "request", source: "device phone"),
            Self.span("orphan", parent: "elsewhere"),
            Self.span("other-trace", parent: "request", trace: "u"),
        ]
        #expect(TraceSpanRows.rows(of: spans).map(\.span) == spans)
        #expect(TraceSpanRows.rows(of: spans).allSatisfy { $0.children.isEmpty && $0.childrenJSON == nil })
    }

    @Test func oneLevelOnlyAndEveryVersionOfASpanIsWrittenInOrder() {
        var renamed = Self.span("commit", parent: "request")
        renamed.message = "again"
        let rows = TraceSpanRows.rows(of: [
            Self.span("request"), Self.span("commit", parent: "request"), Self.span("push", parent: "commit"), renamed,
        ])
        #expect(rows.map(\.span.spanID) == ["request", "push"])
        #expect(rows[0].children == [Self.span("commit", parent: "request"), renamed], "read back, the later wins")
    }

    @Test func malformedChildrenAreSkipped() {
        let parent = Self.span("request")
        #expect(TraceSpanRows.children(fromJSON: "not json", of: parent).isEmpty)
        #expect(TraceSpanRows.children(fromJSON: #"[{"id":"x"},{"id":"c","name":"commit","start":1,"end":2}]"#, of: parent).map(\.spanID) == ["c"])
    }
}
