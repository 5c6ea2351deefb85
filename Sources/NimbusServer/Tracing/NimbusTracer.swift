import Foundation
import HTTPTypes
import Instrumentation
import NimbusStore
import Tracing
import W3CTraceContext

/// The server's `Tracer` (swift-distributed-tracing): continues the W3C trace a request's
/// `traceparent` names, and writes every span it starts to the ``TraceJournal``.
///
/// ```swift
/// var context = ServiceContext.topLevel
/// tracer.extract(TraceHeaders(request.headers, deviceHeader: name), into: &context, using: TraceHeadersExtractor())
/// if tracer.isSampled(context) {
///     try await tracer.withSpan("records/modify", context: context, ofKind: .server) { span in … }
/// }
/// ```
///
/// One tracer per server (not the process-wide `InstrumentationSystem`), so several servers in
/// one process — tests, `nimbus-demo` — each record their own.
struct NimbusTracer: Tracer {
    let journal: TraceJournal
    let settings: TraceSettings
    /// Numbers in `0..<1`, for sampling requests that carry no `traceparent`.
    let random: @Sendable () -> Double
    /// New span and trace IDs.
    let ids: TraceIDGenerator

    /// Whether a request whose headers gave `context` is traced.
    func isSampled(_ context: ServiceContext) -> Bool {
        guard settings.enabled else { return false }
        if let trace = context[TraceContextKey.self] { return trace.flags.contains(.sampled) }
        return settings.sampleUntraced > 0 && random() < settings.sampleUntraced
    }

    func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
    ) where Extract.Carrier == Carrier {
        guard let parent = extractor.extract(key: "traceparent", from: carrier), parent.utf8.count == 55 else { return }
        let state = extractor.extract(key: "tracestate", from: carrier)
        // A malformed header is ignored, as W3C asks: the request is then not part of a trace.
        if let trace = try? TraceContext(traceParentHeaderValue: parent, traceStateHeaderValue: state) {
            context[TraceContextKey.self] = trace
        } else if let trace = try? TraceContext(traceParentHeaderValue: parent) {
            context[TraceContextKey.self] = trace
        }
    }

    func inject<Carrier, Inject: Injector>(
        _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
    ) where Inject.Carrier == Carrier {
        guard let trace = context.traceContext else { return }
        injector.inject(trace.traceParentHeaderValue, forKey: "traceparent", into: &carrier)
    }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> NimbusSpan {
        let context = context()
        let parent = context.traceContext
        var source = ids.source
        let trace = TraceContext(
            traceID: parent?.traceID ?? TraceID.random(using: &source), spanID: SpanID.random(using: &source),
            flags: parent?.flags ?? .sampled, state: parent?.state ?? TraceState())
        return NimbusSpan(
            operationName: operationName, context: context, traceContext: trace, parentSpanID: parent?.spanID,
            startMicros: Int64(instant().nanosecondsSinceEpoch / 1000), journal: journal)
    }

    func forceFlush() {}

    /// A new span ID, for a hop kept inside its parent span (``ChildHop``).
    func newSpanID() -> SpanID {
        var source = ids.source
        return SpanID.random(using: &source)
    }

    /// Now, in microseconds since 1970, as spans record it.
    static var nowMicros: Int64 { Int64(DefaultTracerClock.now.nanosecondsSinceEpoch / 1000) }

    /// Records a hop that has no duration of its own (a push sent, a notification created):
    /// a span that starts and ends now, child of `parent`.
    func recordInstant(
        _ name: String, parent: TraceContext, attributes: [String: String], recordNames: [String] = [],
        errorCode: String? = nil, message: String? = nil
    ) {
        let now = Self.nowMicros
        var source = ids.source
        journal.record(
            TraceSpan(
                traceID: parent.traceID.description, spanID: SpanID.random(using: &source).description,
                parentSpanID: parent.spanID.description, name: name, source: journal.source, startMicros: now,
                endMicros: now, status: errorCode == nil ? .ok : .error, errorCode: errorCode, message: message,
                attributes: attributes, recordNames: recordNames))
    }
}
