/// How the server traces changes (see docs/OBSERVABILITY.md, "Tracing").
///
/// A request that carries a sampled W3C `traceparent` header (the Nimbus SDK sends one with
/// every request of a traced send or fetch) is traced: its spans — the request, the commit and
/// the notifications it created, the pushes to each device — are written to the store, where
/// `nimbus trace` and the dashboard read them. Requests without one are not traced, unless
/// ``sampleUntraced`` says so.
public struct TraceSettings: Sendable {
    /// Whether the server records spans at all (`nimbus serve --no-tracing` turns it off).
    public var enabled = true
    /// The share (0…1) of requests without a `traceparent` that start a trace of their own
    /// (third-party CloudKit clients send none). Default 0.
    public var sampleUntraced: Double = 0
    /// How long spans are kept (pruned by the compaction service).
    public var retention: Duration = .seconds(7 * 24 * 3600)
    /// How long after the first span of a batch the batch is written to the store. 50 ms beat
    /// 20 ms on CPU and p99 once the writes ran at a low priority; 100 ms to 1 s did no better
    /// beyond the noise (docs/PERFORMANCE.md, "Tracing overhead", seventh and eighth rounds).
    public var flushInterval: Duration = .milliseconds(50)
    /// The most spans held in memory waiting to be written; beyond it the oldest are dropped
    /// (and counted: ``TraceJournal/droppedSpans``).
    public var bufferLimit = 50_000
    /// This node's name in spans (`source: server <node>`); defaults to the host name.
    public var nodeName: String?
    /// An OpenTelemetry collector's OTLP/HTTP endpoint (`http://collector:4318`): every span
    /// written to the store is sent there too, as JSON to its `/v1/traces`
    /// (`nimbus serve --trace-otlp-endpoint`). `nil`: none.
    public var otlpEndpoint: String?
    /// Headers sent with every export (a collector's or vendor's API key:
    /// `--trace-otlp-header "x-api-key=…"`).
    public var otlpHeaders: [String: String] = [:]
    /// The most spans waiting for the collector; beyond it the oldest are dropped and counted.
    public var otlpQueueLimit = 10_000

    public init() {}
}
