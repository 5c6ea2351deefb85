import Foundation
import Instrumentation
import Logging
import NimbusStore
import NimbusTestSupport
import Testing
import Tracing
import W3CTraceContext

@testable import NimbusServer

/// A traced request's spans are freed when it ends (a span once held the context that held the
/// span: every traced request leaked two), and their IDs come from the tracer's generator.
@Suite("Span lifetime")
struct SpanLifetimeTests {
    /// Keeps spans in memory only.
    actor MemoryTraces: TraceStore {
        var spans: [TraceSpan] = []
        func appendTraceSpans(_ spans: [TraceSpan]) async throws { self.spans += spans }
        func traceSpans(traceID: String) async throws -> [TraceSpan] { spans.filter { $0.traceID == traceID } }
        func traceIDs(touchingRecord recordName: String, limit: Int) async throws -> [String] { [] }
        func pruneTraceSpans(endedBefore micros: Int64) async throws -> Int { 0 }
    }

    static func tracer() -> NimbusTracer {
        let journal = TraceJournal(store: MemoryTraces(), settings: TraceSettings(), logger: Logger(label: "test"))
        return NimbusTracer(journal: journal, settings: TraceSettings(), random: { 0 }, ids: TraceIDGenerator(seed: 42))
    }

    @Test func anEndedSpanAndItsChildAreFreed() throws {
        let tracer = Self.tracer()
        weak var request: NimbusSpan?
        weak var commit: NimbusSpan?
        do {
            let parent = tracer.startSpan("records/modify", context: ServiceContext.topLevel, ofKind: .server)
            // The context a handler sees holds the span, as `ServiceContext.currentSpan` needs.
            #expect(parent.context[CurrentSpanKey.self] === parent)
            let child = tracer.startSpan("commit", context: parent.context, ofKind: .internal)
            #expect(child.parentSpanID == parent.traceContext.spanID)
            #expect(child.traceContext.traceID == parent.traceContext.traceID)
            child.end()
            parent.end()
            request = parent
            commit = child
        }
        #expect(request == nil)
        #expect(commit == nil)
    }

    @Test func aHopKeptInsideASpanIsWrittenAsItsChildWhenTheSpanEnds() async throws {
        let store = MemoryTraces()
        let journal = TraceJournal(store: store, settings: TraceSettings(), logger: Logger(label: "test"))
        let tracer = NimbusTracer(journal: journal, settings: TraceSettings(), random: { 0 }, ids: TraceIDGenerator(seed: 7))
        let request = tracer.startSpan("records/modify", context: ServiceContext.topLevel, ofKind: .server)
        var facts = SpanFacts()
        facts["version"] = "12"
        var commit = ChildHop(name: "commit", spanID: tracer.newSpanID(), startMicros: 10, endMicros: 20, facts: facts)
        commit.fail(code: "CONFLICT", message: "nothing was written")
        request.add(commit)
        await journal.flush()
        #expect(await store.spans.isEmpty, "a kept hop waits for its span")
        request.end()
        await journal.flush()
        let spans = await store.spans
        #expect(spans.map(\.name) == ["records/modify", "commit"])
        let written = try #require(spans.last)
        #expect(written.traceID == request.traceContext.traceID.description)
        #expect(written.parentSpanID == request.traceContext.spanID.description)
        #expect(written.spanID == commit.spanID.description)
        #expect((written.startMicros, written.endMicros) == (10, 20))
        #expect(written.status == .error && written.errorCode == "CONFLICT" && written.message == "nothing was written")
        #expect(written.attributes == ["version": "12"])
    }

    @Test func spanIDsComeFromTheSeededGeneratorAndDoNotRepeat() {
        let first = Self.tracer()
        let second = Self.tracer()
        var ids = Set<String>()
        for _ in 0..<1_000 {
            let a = first.startSpan("a", context: ServiceContext.topLevel, ofKind: .server)
            let b = second.startSpan("a", context: ServiceContext.topLevel, ofKind: .server)
            // Same seed, same IDs: the generator is the only source.
            #expect(a.traceContext.spanID == b.traceContext.spanID)
            ids.insert(a.traceContext.spanID.description)
        }
        #expect(ids.count == 1_000)
    }
}
