import NIOConcurrencyHelpers

/// What this node served lately: requests by operation, responses by HTTP status and their
/// latencies, in one-second slots over the last minute. Fed by a router middleware; read by
/// the dashboard's live page. One lock per request, no allocation once an operation's name
/// has been seen.
public final class RequestStatistics: Sendable {
    /// The seconds kept.
    public static let windowSeconds = 60
    /// Latency bucket `i` holds durations below 2^i microseconds (the last one, everything).
    static let bucketCount = 28

    struct Slot {
        var second: Int64 = -1
        var byOperation: [String: Int] = [:]
        var byStatus: [Int: Int] = [:]
        var byErrorCode: [String: Int] = [:]
        var latency = [Int](repeating: 0, count: RequestStatistics.bucketCount)
    }

    struct State {
        var total = 0
        var slots = [Slot](repeating: Slot(), count: RequestStatistics.windowSeconds)
    }

    private let state = NIOLockedValueBox(State())
    private let start = ContinuousClock.now
    /// Where each request and error is also counted, for `/metrics` (`nil`: metrics off).
    let metrics: ServerMetrics?

    /// Empty statistics, starting now.
    public init() {
        self.metrics = nil
    }

    /// Empty statistics that also feed `metrics`.
    init(metrics: ServerMetrics?) {
        self.metrics = metrics
    }

    /// How long the statistics (the server) have been running.
    public var uptime: Duration { ContinuousClock.now - start }

    /// The second of `instant` since the statistics started.
    func second(of instant: ContinuousClock.Instant) -> Int64 {
        (instant - start).components.seconds
    }

    /// Counts one request that ended now.
    public func record(operation: String, status: Int, duration: Duration) {
        record(operation: operation, status: status, duration: duration, at: ContinuousClock.now)
        metrics?.countRequest(operation: operation, status: status, duration: duration)
    }

    func record(operation: String, status: Int, duration: Duration, at instant: ContinuousClock.Instant) {
        let second = second(of: instant)
        let micros = max(0, duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000)
        let bucket = min(Self.bucketCount - 1, micros == 0 ? 0 : 64 - micros.leadingZeroBitCount)
        state.withLockedValue { state in
            state.total += 1
            let index = Int(second % Int64(Self.windowSeconds))
            if state.slots[index].second != second { state.slots[index] = Slot(second: second) }
            state.slots[index].byOperation[operation, default: 0] += 1
            state.slots[index].byStatus[status, default: 0] += 1
            state.slots[index].latency[bucket] += 1
        }
    }

    /// Counts an API request that failed with a CloudKit error code (`AUTHENTICATION_FAILED`, …).
    public func recordError(code: String) {
        recordError(code: code, at: ContinuousClock.now)
        metrics?.countError(code: code)
    }

    func recordError(code: String, at instant: ContinuousClock.Instant) {
        let second = second(of: instant)
        state.withLockedValue { state in
            let index = Int(second % Int64(Self.windowSeconds))
            if state.slots[index].second != second { state.slots[index] = Slot(second: second) }
            state.slots[index].byErrorCode[code, default: 0] += 1
        }
    }

    /// The last `seconds` complete seconds (at most ``windowSeconds`` − 1) and the total.
    public func snapshot(seconds: Int = 10) -> RequestStatisticsSnapshot {
        snapshot(seconds: seconds, at: ContinuousClock.now)
    }

    func snapshot(seconds: Int, at instant: ContinuousClock.Instant) -> RequestStatisticsSnapshot {
        let seconds = min(max(seconds, 1), Self.windowSeconds - 1)
        let now = second(of: instant)
        let oldest = now - Int64(seconds)
        var byOperation: [String: Int] = [:]
        var byStatus: [Int: Int] = [:]
        var byErrorCode: [String: Int] = [:]
        var latency = [Int](repeating: 0, count: Self.bucketCount)
        let total = state.withLockedValue { state in
            for slot in state.slots where slot.second >= oldest && slot.second < now {
                byOperation.merge(slot.byOperation, uniquingKeysWith: +)
                byStatus.merge(slot.byStatus, uniquingKeysWith: +)
                byErrorCode.merge(slot.byErrorCode, uniquingKeysWith: +)
                for index in latency.indices { latency[index] += slot.latency[index] }
            }
            return state.total
        }
        var snapshot = RequestStatisticsSnapshot(
            total: total, seconds: seconds, byOperation: byOperation, byStatus: byStatus, latencyBuckets: latency)
        snapshot.byErrorCode = byErrorCode
        return snapshot
    }
}

/// Requests of a window of seconds, as ``RequestStatistics/snapshot(seconds:)`` sums them.
public struct RequestStatisticsSnapshot: Sendable, Equatable {
    /// Every request this node counted since it started.
    public var total: Int
    /// The seconds summed.
    public var seconds: Int
    public var byOperation: [String: Int]
    public var byStatus: [Int: Int]
    /// API requests that failed, by CloudKit `serverErrorCode` (per-item errors inside a
    /// successful response are not counted).
    public var byErrorCode: [String: Int] = [:]
    /// Bucket `i`: requests that took less than 2^i microseconds.
    public var latencyBuckets: [Int]

    /// A snapshot of these numbers (``RequestStatistics/snapshot(seconds:)`` makes them).
    public init(total: Int, seconds: Int, byOperation: [String: Int], byStatus: [Int: Int], latencyBuckets: [Int]) {
        self.total = total
        self.seconds = seconds
        self.byOperation = byOperation
        self.byStatus = byStatus
        self.latencyBuckets = latencyBuckets
    }

    /// The requests of the window.
    public var requests: Int { byStatus.values.reduce(0, +) }

    /// Requests per second of each operation, most frequent first.
    public var ratesByOperation: [(operation: String, perSecond: Double)] {
        byOperation.map { (operation: $0.key, perSecond: Double($0.value) / Double(seconds)) }.sorted { ($0.1, $1.0) > ($1.1, $0.0) }
    }

    /// The share of responses with a status of 400 or more (0 without requests).
    public var errorRate: Double {
        let requests = requests
        guard requests > 0 else { return 0 }
        return Double(byStatus.filter { $0.key >= 400 }.values.reduce(0, +)) / Double(requests)
    }

    /// An upper bound of the `p` quantile (0…1) of latencies in milliseconds; `nil` without
    /// requests.
    public func latencyMillis(quantile p: Double) -> Double? {
        let count = latencyBuckets.reduce(0, +)
        guard count > 0 else { return nil }
        let rank = max(1, Int((p * Double(count)).rounded(.up)))
        var seen = 0
        for (index, n) in latencyBuckets.enumerated() {
            seen += n
            if seen >= rank { return Double(Int64(1) << index) / 1000 }
        }
        return Double(Int64(1) << (latencyBuckets.count - 1)) / 1000
    }
}
