import Instrumentation
import W3CTraceContext

/// A W3C trace context the SDK sends with its requests as the `traceparent` header, so that the
/// server records what it did for them under the same trace (`nimbus trace <trace ID>`).
///
/// The sync engine starts one for each send and continues the one a push carries for the fetch
/// it triggers. Your code can trace its own requests the same way:
///
/// ```swift
/// let trace = RequestTrace.random()
/// try await RequestTrace.$current.withValue(trace) {
///     try await database.save(record)      // sent with `traceparent: 00-<trace ID>-…-01`
/// }
/// print("nimbus trace \(trace.traceID)")
/// ```
public struct RequestTrace: Sendable, Hashable, CustomStringConvertible {
    let context: TraceContext

    /// A new trace, sampled (the server records it).
    public static func random() -> RequestTrace {
        RequestTrace(context: TraceContext(traceID: .random(), spanID: .random(), flags: .sampled, state: TraceState()))
    }

    /// Parses a `traceparent` value (`00-<32 hex>-<16 hex>-<2 hex>`); `nil` when it is malformed.
    public init?(traceParent: String) {
        guard traceParent.utf8.count == 55, let context = try? TraceContext(traceParentHeaderValue: traceParent) else {
            return nil
        }
        self.context = context
    }

    init(context: TraceContext) { self.context = context }

    /// The trace's ID: 32 lowercase hex digits, what `nimbus trace` takes.
    public var traceID: String { context.traceID.description }
    /// This span's ID: 16 lowercase hex digits.
    public var spanID: String { context.spanID.description }
    /// Whether the server records the trace.
    public var isSampled: Bool { context.flags.contains(.sampled) }
    /// The `traceparent` header value.
    public var traceParent: String { context.traceParentHeaderValue }
    public var description: String { traceParent }

    /// The same trace, a new span (a hop caused by this one).
    public func child() -> RequestTrace {
        RequestTrace(context: TraceContext(traceID: context.traceID, spanID: .random(), flags: context.flags, state: context.state))
    }

    /// The trace requests made by the current task belong to, if any.
    @TaskLocal public static var current: RequestTrace?
}
