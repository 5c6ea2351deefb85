import CoreMetrics
import NIOConcurrencyHelpers

/// The server's own metrics, made through the swift-metrics factory it is given (one per
/// server: several servers in one process each count only their own, and nothing goes
/// through `MetricsSystem.bootstrap`). `/metrics` renders them as Prometheus text
/// (``MetricsEndpoint``); docs/OBSERVABILITY.md describes each.
///
/// Label values come from fixed sets: operation names from ``APIOperation`` (or the kind of
/// route, see ``RequestStatisticsMiddleware/operation(ofPath:)``), HTTP status codes, CloudKit
/// `serverErrorCode`s. Handles are made once per label set and cached, so counting a request
/// takes a lock and two dictionary lookups, and allocates nothing once its labels were seen.
///
/// ```swift
/// let registry = PrometheusCollectorRegistry()
/// let metrics = ServerMetrics(factory: PrometheusMetricsFactory(registry: registry))
/// metrics.countRequest(operation: "records/modify", status: 200, duration: .milliseconds(3))
/// ```
final class ServerMetrics: Sendable {
    let factory: any MetricsFactory

    /// One operation's handles: its latency histogram, and its request counter per status.
    private struct OperationHandles {
        var latency: CoreMetrics.Timer
        var byStatus: [Int: CoreMetrics.Counter] = [:]
    }

    private let operations = NIOLockedValueBox<[String: OperationHandles]>([:])
    private let errorsByCode = NIOLockedValueBox<[String: CoreMetrics.Counter]>([:])
    private let readsBySource: [RecordReadSource: CoreMetrics.Counter]
    private let storeErrorsBySource: [ErrorSource: CoreMetrics.Counter]
    private let commits: CoreMetrics.Counter
    private let recordsSaved: CoreMetrics.Counter
    private let recordsDeleted: CoreMetrics.Counter
    private let changePages: CoreMetrics.Counter
    private let notificationsCreated: CoreMetrics.Counter
    private let notificationsPushed: CoreMetrics.Counter
    private let pushConnections: CoreMetrics.Gauge
    private let pushQueueFrames: CoreMetrics.Gauge
    private let assetBytesUploaded: CoreMetrics.Counter
    private let assetBytesDownloaded: CoreMetrics.Counter
    private let traceSpansWritten: CoreMetrics.Counter
    private let traceSpansDropped: CoreMetrics.Counter
    private let backgroundRequests: CoreMetrics.Counter
    private let spansExported: [ExportOutcome: CoreMetrics.Counter]

    /// Where a count of records read comes from.
    enum RecordReadSource: String, CaseIterable, Sendable {
        case lookup, query, changes
    }

    /// What became of spans meant for an OpenTelemetry collector.
    enum ExportOutcome: String, CaseIterable, Sendable {
        /// The collector took them (HTTP 2xx).
        case sent
        /// The collector refused them or did not answer.
        case failed
        /// The queue was full: never sent.
        case dropped
    }

    /// Which edge met an unexpected (non-CloudKit) error.
    enum ErrorSource: String, CaseIterable, Sendable {
        case api, assets
    }

    // The names, as docs/OBSERVABILITY.md lists them.
    static let requestsName = "nimbus_http_requests_total"
    static let latencyName = "nimbus_http_request_duration_seconds"
    static let errorsName = "nimbus_api_errors_total"

    /// Latency buckets: 0.5 ms to 10 s (a single-record modify takes about a millisecond).
    static let latencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// Metrics made by `factory` (the server's Prometheus registry, or any other backend).
    init(factory: any MetricsFactory) {
        self.factory = factory
        readsBySource = Dictionary(
            uniqueKeysWithValues: RecordReadSource.allCases.map {
                ($0, CoreMetrics.Counter(label: "nimbus_records_read_total", dimensions: [("via", $0.rawValue)], factory: factory))
            })
        storeErrorsBySource = Dictionary(
            uniqueKeysWithValues: ErrorSource.allCases.map {
                ($0, CoreMetrics.Counter(label: "nimbus_store_errors_total", dimensions: [("edge", $0.rawValue)], factory: factory))
            })
        commits = CoreMetrics.Counter(label: "nimbus_commits_total", factory: factory)
        recordsSaved = CoreMetrics.Counter(label: "nimbus_records_written_total", dimensions: [("kind", "saved")], factory: factory)
        recordsDeleted = CoreMetrics.Counter(
            label: "nimbus_records_written_total", dimensions: [("kind", "deleted")], factory: factory)
        changePages = CoreMetrics.Counter(label: "nimbus_change_pages_total", factory: factory)
        notificationsCreated = CoreMetrics.Counter(label: "nimbus_notifications_created_total", factory: factory)
        notificationsPushed = CoreMetrics.Counter(label: "nimbus_notifications_pushed_total", factory: factory)
        pushConnections = CoreMetrics.Gauge(label: "nimbus_push_connections", factory: factory)
        pushQueueFrames = CoreMetrics.Gauge(label: "nimbus_push_queue_frames", factory: factory)
        assetBytesUploaded = CoreMetrics.Counter(
            label: "nimbus_asset_bytes_total", dimensions: [("direction", "upload")], factory: factory)
        assetBytesDownloaded = CoreMetrics.Counter(
            label: "nimbus_asset_bytes_total", dimensions: [("direction", "download")], factory: factory)
        traceSpansWritten = CoreMetrics.Counter(label: "nimbus_trace_spans_written_total", factory: factory)
        traceSpansDropped = CoreMetrics.Counter(label: "nimbus_trace_spans_dropped_total", factory: factory)
        backgroundRequests = CoreMetrics.Counter(label: "nimbus_throttle_background_requests_total", factory: factory)
        spansExported = Dictionary(
            uniqueKeysWithValues: ExportOutcome.allCases.map {
                (
                    $0,
                    CoreMetrics.Counter(
                        label: "nimbus_trace_spans_exported_total", dimensions: [("outcome", $0.rawValue)], factory: factory)
                )
            })
    }

    // MARK: - Requests

    /// Counts one HTTP request that ended with `status` after `duration`.
    func countRequest(operation: String, status: Int, duration: Duration) {
        let (counter, latency) = operations.withLockedValue { operations in
            if let handles = operations[operation], let counter = handles.byStatus[status] {
                return (counter, handles.latency)
            }
            var handles =
                operations[operation]
                ?? OperationHandles(
                    latency: CoreMetrics.Timer(
                        label: Self.latencyName, dimensions: [("operation", operation)], factory: factory))
            let counter = CoreMetrics.Counter(
                label: Self.requestsName, dimensions: [("operation", operation), ("status", String(status))],
                factory: factory)
            handles.byStatus[status] = counter
            operations[operation] = handles
            return (counter, handles.latency)
        }
        counter.increment()
        let (seconds, attoseconds) = duration.components
        latency.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// Counts an API request that failed with a CloudKit `serverErrorCode`.
    func countError(code: String) {
        let counter = errorsByCode.withLockedValue { counters in
            if let counter = counters[code] { return counter }
            let counter = CoreMetrics.Counter(label: Self.errorsName, dimensions: [("code", code)], factory: factory)
            counters[code] = counter
            return counter
        }
        counter.increment()
    }

    /// Counts a request that failed on an error that is not a CloudKit error (the database
    /// or the disk failed): answered INTERNAL_ERROR.
    func countStoreError(at edge: ErrorSource) {
        storeErrorsBySource[edge]?.increment()
    }

    // MARK: - Records

    /// Counts a `records/modify` transaction that committed, and the records it saved and deleted.
    func countCommit(saved: Int, deleted: Int) {
        commits.increment()
        if saved > 0 { recordsSaved.increment(by: saved) }
        if deleted > 0 { recordsDeleted.increment(by: deleted) }
    }

    /// Counts records served to a client.
    func countRecordsRead(_ count: Int, via source: RecordReadSource) {
        guard count > 0 else { return }
        readsBySource[source]?.increment(by: count)
    }

    /// Counts one page of a zone's change feed served.
    func countChangePage() {
        changePages.increment()
    }

    // MARK: - Notifications and push

    /// Counts notifications that commits on this node created.
    func countNotificationsCreated(_ count: Int) {
        guard count > 0 else { return }
        notificationsCreated.increment(by: count)
    }

    /// Counts frames queued to connected devices.
    func countNotificationsPushed(_ count: Int) {
        guard count > 0 else { return }
        notificationsPushed.increment(by: count)
    }

    /// Sets the push gauges (at each scrape, from ``PushHub/gaugeReadings()``).
    func setPush(connections: Int, queuedFrames: Int) {
        pushConnections.record(connections)
        pushQueueFrames.record(queuedFrames)
    }

    // MARK: - Assets

    func countAssetBytesUploaded(_ bytes: Int64) {
        guard bytes > 0 else { return }
        assetBytesUploaded.increment(by: bytes)
    }

    func countAssetBytesDownloaded(_ bytes: Int64) {
        guard bytes > 0 else { return }
        assetBytesDownloaded.increment(by: bytes)
    }

    // MARK: - Tracing

    /// Counts spans of traced changes the trace journal wrote to the store.
    func countTraceSpansWritten(_ count: Int) {
        guard count > 0 else { return }
        traceSpansWritten.increment(by: count)
    }

    /// Counts spans the trace journal dropped: its buffer was full, the store did not keep up.
    func countTraceSpansDropped(_ count: Int) {
        guard count > 0 else { return }
        traceSpansDropped.increment(by: count)
    }

    /// Counts an API request that ran in the background lane: its user sent more requests at
    /// once than it may run beside other users (docs/THROTTLING.md).
    func countBackgroundRequest() {
        backgroundRequests.increment()
    }

    /// Counts spans meant for the OpenTelemetry collector, by what became of them.
    func countTraceSpansExported(_ count: Int, outcome: ExportOutcome) {
        guard count > 0 else { return }
        spansExported[outcome]?.increment(by: count)
    }
}
