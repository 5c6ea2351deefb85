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
    }

    let traceContext: TraceContext
    let parentSpanID: SpanID?
    let startMicros: Int64
    private let journal: TraceJournal
    private let state: NIOLockedValueBox<State>
    /// The context the span was started in (not one holding the span itself: the span holding
    /// a context that holds the span would never be freed). Its own contexts are made when
    /// asked for: a request's `commit` span is never asked.
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

    /// The span's context, holding the span, for handlers to find (``ServiceContext/currentSpan``).
    var context: ServiceContext {
        var context = parentContext
        context[CurrentSpanKey.self] = self
        return context
    }

    /// The context a child span of this one starts in (its trace context, not the span).
    var parentContext: ServiceContext {
        var context = startedIn
        context[TraceContextKey.self] = traceContext
        return context
    }

    /// The `traceparent` that names this span as the parent of what it causes.
    var traceParent: String { traceContext.traceParentHeaderValue }

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
        journal.record(span(of: finished, endMicros: endMicros))
    }

    private func span(of state: State, endMicros: Int64) -> TraceSpan {
        var facts = state.facts
        state.attributes.forEach { key, value in facts.attributes[key] = Self.text(value) }
        if facts.message == nil, let text = state.status?.message { facts.message = text }
        return TraceSpan(
            traceID: traceContext.traceID.description, spanID: traceContext.spanID.description,
            parentSpanID: parentSpanID?.description, name: state.operationName, source: journal.source,
            startMicros: startMicros, endMicros: max(endMicros, startMicros),
            status: state.status?.code == .error ? .error : .ok, errorCode: facts.errorCode, message: facts.message,
            attributes: facts.attributes, recordNames: facts.recordNames)
    }

    private static func text(_ value: SpanAttribute) -> String {
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
