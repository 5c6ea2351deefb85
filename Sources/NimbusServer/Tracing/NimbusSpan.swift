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
/// Facts the trace view reads are kept as attributes with these names: `nimbus.error_code`
/// (a CloudKit `serverErrorCode`), `nimbus.message` (what happened, in words),
/// `nimbus.records` (the record names the hop touched); every other attribute is shown as is.
final class NimbusSpan: Tracing.Span, Sendable {
    private struct State {
        var operationName: String
        var attributes = SpanAttributes()
        var status: SpanStatus?
        var events: [SpanEvent] = []
        var ended = false
    }

    let traceContext: TraceContext
    let parentSpanID: SpanID?
    let startMicros: Int64
    private let journal: TraceJournal
    private let state: NIOLockedValueBox<State>
    /// Set once at creation (the context holds the span itself, for handlers to find).
    private let contextBox: NIOLockedValueBox<ServiceContext>

    init(
        operationName: String, context: ServiceContext, traceContext: TraceContext, parentSpanID: SpanID?,
        startMicros: Int64, journal: TraceJournal
    ) {
        self.traceContext = traceContext
        self.parentSpanID = parentSpanID
        self.startMicros = startMicros
        self.journal = journal
        self.state = NIOLockedValueBox(State(operationName: operationName))
        var context = context
        context[TraceContextKey.self] = traceContext
        self.contextBox = NIOLockedValueBox(context)
        contextBox.withLockedValue { $0[CurrentSpanKey.self] = self }
    }

    var context: ServiceContext { contextBox.withLockedValue { $0 } }

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
    func addEvent(_ event: SpanEvent) { state.withLockedValue { $0.events.append(event) } }
    func addLink(_ link: SpanLink) {}

    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        state.withLockedValue { state in
            state.status = SpanStatus(code: .error, message: "\(error)")
            if let error = error as? CloudKitError {
                state.attributes["nimbus.error_code"] = error.code.rawValue
                state.attributes["nimbus.message"] = error.reason
            }
        }
    }

    /// Changes several attributes under one lock (the `attributes` setter copies them all).
    func update(_ body: (inout SpanAttributes) -> Void) {
        state.withLockedValue { body(&$0.attributes) }
    }

    /// Records that the hop failed with a CloudKit error (or that some of its records did).
    func fail(code: String, message: String) {
        state.withLockedValue { state in
            state.status = SpanStatus(code: .error, message: message)
            state.attributes["nimbus.error_code"] = code
            state.attributes["nimbus.message"] = message
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
        var attributes: [String: String] = [:]
        var records: [String] = []
        var code: String?
        var message: String?
        state.attributes.forEach { key, value in
            switch key {
            case "nimbus.records":
                if case .stringArray(let names) = value.toSpanAttribute() { records = names }
            case "nimbus.error_code": code = Self.text(value)
            case "nimbus.message": message = Self.text(value)
            default: attributes[key] = Self.text(value)
            }
        }
        if message == nil, let text = state.status?.message { message = text }
        return TraceSpan(
            traceID: traceContext.traceID.description, spanID: traceContext.spanID.description,
            parentSpanID: parentSpanID?.description, name: state.operationName, source: journal.source,
            startMicros: startMicros, endMicros: max(endMicros, startMicros),
            status: state.status?.code == .error ? .error : .ok, errorCode: code, message: message,
            attributes: attributes, recordNames: records)
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
