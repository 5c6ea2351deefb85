import Foundation
import Instrumentation
import NIOConcurrencyHelpers
import NimbusProtocol
import NimbusStore
import Tracing
import W3CTraceContext

/// A span of a traced request on this server: a `Tracing.Span` whose facts become a
/// ``TraceSpan`` in the ``TraceJournal`` when it ends.
///
/// The server's own code writes facts as text through ``update(_:)`` (``SpanFacts``): no
/// `SpanAttribute` boxes on a request's path. The generic `attributes` of `Tracing.Span` are
/// kept for other instrumentation, and merged into the facts when the span ends.
final class NimbusSpan: Tracing.Span, Sendable {
    private struct State {
        var operationName: String
        var facts = SpanFacts()
        /// Set only by code that uses the generic `Tracing.Span` API.
        var attributes = SpanAttributes()
        var status: SpanStatus?
        var ended = false
        /// Hops inside this span that have no span object of their own (``ChildHop``).
        var children: [ChildHop] = []
    }

    let traceContext: TraceContext
    let parentSpanID: SpanID?
    let startMicros: Int64
    private let journal: TraceJournal
    private let state: NIOLockedValueBox<State>
    /// The context the span was started in (not one holding the span itself: the span holding
    /// a context that holds the span would never be freed). Its own is made when asked for.
    private let startedIn: ServiceContext

    init(
        operationName: String, context: ServiceContext, traceContext: TraceContext, parentSpanID: SpanID?,
        startMicros: Int64, journal: TraceJournal
    ) {
        self.traceContext = traceContext
        self.parentSpanID = parentSpanID
        self.startMicros = startMicros
        self.journal = journal
        self.state = NIOLockedValueBox(State(operationName: operationName))
        self.startedIn = context
    }

    /// The span's context, holding the span, for handlers to find (``ServiceContext/currentSpan``)
    /// and for a child span to name as its parent (``ServiceContext/traceContext``).
    var context: ServiceContext {
        var context = startedIn
        context[CurrentSpanKey.self] = self
        return context
    }

    var operationName: String {
        get { state.withLockedValue { $0.operationName } }
        set { state.withLockedValue { $0.operationName = newValue } }
    }

    var attributes: SpanAttributes {
        get { state.withLockedValue { $0.attributes } }
        set { state.withLockedValue { $0.attributes = newValue } }
    }

    var isRecording: Bool { !state.withLockedValue { $0.ended } }

    func setStatus(_ status: SpanStatus) { state.withLockedValue { $0.status = status } }
    func addEvent(_ event: SpanEvent) {}
    func addLink(_ link: SpanLink) {}

    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        if let error = error as? CloudKitError {
            fail(code: error.code.rawValue, message: error.reason)
        } else {
            state.withLockedValue { $0.status = SpanStatus(code: .error, message: "\(error)") }
        }
    }

    /// Changes the span's facts under one lock.
    func update(_ body: (inout SpanFacts) -> Void) {
        state.withLockedValue { body(&$0.facts) }
    }

    /// Adds a hop that ran inside this span (the `commit` of a `records/modify`), written as a
    /// child span when this one ends: one span object per request, not one per hop.
    func add(_ child: ChildHop) {
        state.withLockedValue { $0.children.append(child) }
    }

    /// Records that the hop failed with a CloudKit error (or that some of its records did).
    func fail(code: String, message: String) {
        state.withLockedValue { state in
            state.status = SpanStatus(code: .error, message: message)
            state.facts.errorCode = code
            state.facts.message = message
        }
    }

    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let endMicros = Int64(instant().nanosecondsSinceEpoch / 1000)
        let finished: State? = state.withLockedValue { state in
            guard !state.ended else { return nil }
            state.ended = true
            return state
        }
        guard let finished else { return }
        // Made into stored spans when the journal writes them, off the request's path; the
        // closure holds the span's values, not the span.
        let ended = Ended(
            state: finished, traceContext: traceContext, parentSpanID: parentSpanID, startMicros: startMicros,
            endMicros: endMicros, source: journal.source)
        journal.record(count: 1 + finished.children.count) { ended.spans() }
    }

    /// What an ended span recorded, to be made into its ``TraceSpan`` and its children's.
    private struct Ended: Sendable {
        var state: State
        var traceContext: TraceContext
        var parentSpanID: SpanID?
        var startMicros: Int64
        var endMicros: Int64
        var source: String

        func spans() -> [TraceSpan] {
            let traceID = TraceText.hex(traceContext.traceID)
            let spanID = TraceText.hex(traceContext.spanID)
            var spans = [span(traceID: traceID, spanID: spanID)]
            for child in state.children { spans.append(span(of: child, traceID: traceID, parentSpanID: spanID)) }
            return spans
        }

        private func span(traceID: String, spanID: String) -> TraceSpan {
            var facts = state.facts
            state.attributes.forEach { key, value in facts.attributes[key] = NimbusSpan.text(value) }
            if facts.message == nil, let text = state.status?.message { facts.message = text }
            return TraceSpan(
                traceID: traceID, spanID: spanID, parentSpanID: parentSpanID.map(TraceText.hex), name: state.operationName,
                source: source, startMicros: startMicros, endMicros: max(endMicros, startMicros),
                status: state.status?.code == .error ? .error : .ok, errorCode: facts.errorCode, message: facts.message,
                attributes: facts.attributes, recordNames: facts.recordNames)
        }

        private func span(of child: ChildHop, traceID: String, parentSpanID: String) -> TraceSpan {
            TraceSpan(
                traceID: traceID, spanID: TraceText.hex(child.spanID), parentSpanID: parentSpanID, name: child.name,
                source: source, startMicros: child.startMicros, endMicros: max(child.endMicros, child.startMicros),
                status: child.failed ? .error : .ok, errorCode: child.facts.errorCode, message: child.facts.message,
                attributes: child.facts.attributes, recordNames: child.facts.recordNames)
        }
    }

    fileprivate static func text(_ value: SpanAttribute) -> String {
        switch value.toSpanAttribute() {
        case .string(let text): return text
        case .stringConvertible(let value): return "\(value)"
        case .int32(let n): return String(n)
        case .int64(let n): return String(n)
        case .double(let n): return String(n)
        case .bool(let b): return String(b)
        case .stringArray(let texts): return texts.joined(separator: ", ")
        default: return "\(value)"
        }
    }
}

/// A hop that ran inside a span and ended before it, kept by that span (``NimbusSpan/add(_:)``)
/// rather than started as a span of its own: a request's `commit` is one per traced write, and
/// a span object, its lock and its contexts showed in the profile of a traced request.
struct ChildHop: Sendable {
    var name: String
    var spanID: SpanID
    var startMicros: Int64
    var endMicros: Int64
    var facts: SpanFacts
    var failed = false

    /// Marks the hop failed with a CloudKit error code and what happened in words.
    mutating func fail(code: String, message: String) {
        failed = true
        facts.errorCode = code
        facts.message = message
    }
}

/// What a server span records, as the trace view reads it: attributes shown as they are, the
/// record names the hop touched, and a CloudKit `serverErrorCode` with what happened in words.
struct SpanFacts: Sendable {
    /// Room for the facts a request span gets, so the dictionary grows once.
    var attributes = [String: String](minimumCapacity: 8)
    var recordNames: [String] = []
    var errorCode: String?
    var message: String?

    subscript(key: String) -> String? {
        get { attributes[key] }
        set { attributes[key] = newValue }
    }
}
