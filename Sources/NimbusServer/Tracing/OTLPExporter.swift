import AsyncHTTPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusStore
import ServiceLifecycle

/// Sends the spans the trace journal writes to an OpenTelemetry collector as well, over
/// OTLP/HTTP with JSON bodies (``OTLPEncoding``): `nimbus serve --trace-otlp-endpoint
/// http://collector:4318` (docs/TRACING.md, "OpenTelemetry").
///
/// Spans wait in a queue of at most ``TraceSettings/otlpQueueLimit``; a batch of at most
/// ``batchLimit`` goes out as soon as the last one is answered. A collector that is down or
/// slow never holds up the journal or a request: what does not fit in the queue is dropped,
/// a batch that fails is not sent again, and both are counted in `/metrics`
/// (`nimbus_trace_spans_exported_total{outcome=…}`) and logged when the collector starts or
/// stops failing. Nimbus's own trace store keeps every span either way.
final class OTLPExporter: Service, Sendable {
    /// The most spans in one request to the collector.
    static let batchLimit = 512

    private struct Queue {
        var spans: [TraceSpan] = []
        var failing = false
    }

    /// `…/v1/traces`.
    let url: String
    private let headers: [(String, String)]
    private let limit: Int
    private let timeout: TimeAmount
    private let metrics: ServerMetrics?
    private let logger: Logger
    private let queue = NIOLockedValueBox(Queue())
    private let arrivals: AsyncStream<Void>
    private let arrived: AsyncStream<Void>.Continuation

    /// - Parameters:
    ///   - endpoint: the collector's OTLP/HTTP base URL (`http://host:4318`); spans go to its
    ///     `/v1/traces`, unless it already ends so.
    init(
        endpoint: String, headers: [(String, String)] = [], queueLimit: Int = 10_000,
        timeout: TimeAmount = .seconds(10), metrics: ServerMetrics?, logger: Logger
    ) {
        var base = endpoint
        while base.hasSuffix("/") { base.removeLast() }
        url = base.hasSuffix("/v1/traces") ? base : base + "/v1/traces"
        self.headers = headers
        limit = max(1, queueLimit)
        self.timeout = timeout
        self.metrics = metrics
        self.logger = logger
        (arrivals, arrived) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues spans for the collector; returns at once.
    func enqueue(_ spans: [TraceSpan]) {
        guard !spans.isEmpty else { return }
        let dropped = queue.withLockedValue { queue -> Int in
            queue.spans.append(contentsOf: spans)
            let over = max(0, queue.spans.count - limit)
            if over > 0 { queue.spans.removeFirst(over) }
            return over
        }
        if dropped > 0 { metrics?.countTraceSpansExported(dropped, outcome: .dropped) }
        arrived.yield()
    }

    func run() async throws {
        // On shutdown, what is queued still goes out (the journal's last flush comes first).
        await withGracefulShutdownHandler {
            for await _ in arrivals {
                await sendQueued()
            }
        } onGracefulShutdown: {
            self.arrived.finish()
        }
        // Shutting down: a collector that fails does not hold the server up batch after batch.
        await sendQueued(untilAFailure: true)
    }

    /// Sends what is queued, batch after batch; with `untilAFailure`, drops (and counts) what
    /// is left after a batch fails.
    func sendQueued(untilAFailure: Bool = false) async {
        while true {
            let batch = queue.withLockedValue { queue -> [TraceSpan] in
                let batch = Array(queue.spans.prefix(Self.batchLimit))
                queue.spans.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { return }
            if await !send(batch), untilAFailure {
                let left = queue.withLockedValue { queue in
                    defer { queue.spans.removeAll() }
                    return queue.spans.count
                }
                metrics?.countTraceSpansExported(left, outcome: .dropped)
                return
            }
        }
    }

    /// Sends one batch; whether the collector took it.
    private func send(_ spans: [TraceSpan]) async -> Bool {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: OTLPEncoding.body(spans).serializedBytes()))
        let problem: String?
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: timeout)
            let answer = try await response.body.collect(upTo: 64 * 1024)
            problem =
                (200..<300).contains(response.status.code)
                ? nil : "HTTP \(response.status.code): \(String(buffer: answer).prefix(200))"
        } catch {
            problem = "\(error)"
        }
        metrics?.countTraceSpansExported(spans.count, outcome: problem == nil ? .sent : .failed)
        let wasFailing = queue.withLockedValue { queue in
            defer { queue.failing = problem != nil }
            return queue.failing
        }
        if let problem, !wasFailing {
            logger.warning(
                "the OpenTelemetry collector refused or did not answer; spans are kept in Nimbus's trace store only until it does",
                metadata: ["url": "\(url)", "spans": "\(spans.count)", "error": "\(problem)"])
        } else if problem == nil, wasFailing {
            logger.notice("the OpenTelemetry collector takes spans again", metadata: ["url": "\(url)"])
        }
        return problem == nil
    }
}
