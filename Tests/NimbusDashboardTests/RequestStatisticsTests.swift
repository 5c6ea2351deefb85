import Logging
@testable import NimbusServer
import Testing

/// The live page's numbers, without a server.
@Suite("Request statistics")
struct RequestStatisticsTests {
    @Test("a snapshot sums the window's requests by operation and status, and bounds percentiles")
    func snapshot() {
        let statistics = RequestStatistics()
        for _ in 0..<9 { statistics.record(operation: "records/query", status: 200, duration: .milliseconds(3)) }
        statistics.record(operation: "records/modify", status: 409, duration: .milliseconds(40))
        let now = statistics.snapshot(seconds: 10)
        #expect(now.total == 10)
        let snapshot = RequestStatisticsSnapshot(
            total: 10, seconds: 10, byOperation: ["records/query": 9, "records/modify": 1], byStatus: [200: 9, 409: 1],
            latencyBuckets: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1] + Array(repeating: 0, count: 11))
        #expect(snapshot.requests == 10)
        #expect(snapshot.errorRate == 0.1)
        #expect(snapshot.ratesByOperation.first?.operation == "records/query")
        #expect(snapshot.latencyMillis(quantile: 0.5) == 4.096)
        #expect(snapshot.latencyMillis(quantile: 0.99) == 65.536)
    }
}

/// Counting by the second, with instants the test chooses.
@Suite("Request statistics windows")
struct RequestStatisticsWindowTests {
    @Test("a snapshot sums the complete seconds of its window, error codes included, and forgets older ones")
    func window() {
        let statistics = RequestStatistics()
        let start = ContinuousClock.now
        func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }
        statistics.record(operation: "records/modify", status: 409, duration: .milliseconds(5), at: at(1))
        statistics.recordError(code: "CONFLICT", at: at(1))
        statistics.record(operation: "records/query", status: 200, duration: .milliseconds(1), at: at(2))
        statistics.record(operation: "records/query", status: 200, duration: .milliseconds(1), at: at(3))
        let now = statistics.snapshot(seconds: 5, at: at(3))
        #expect(now.byOperation == ["records/modify": 1, "records/query": 1])
        #expect(now.byErrorCode == ["CONFLICT": 1])
        #expect(now.total == 3)
        let later = statistics.snapshot(seconds: 5, at: at(70))
        #expect(later.requests == 0)
        #expect(later.byErrorCode.isEmpty)
    }

    @Test("operations are named from the API's table, never from arbitrary paths")
    func operationNames() {
        #expect(RequestStatisticsMiddleware.operation(ofPath: "/database/1/c/development/public/records/query") == "records/query")
        #expect(RequestStatisticsMiddleware.operation(ofPath: "/database/1/c/development/tokens/create") == "tokens/create")
        #expect(RequestStatisticsMiddleware.operation(ofPath: "/database/1/c/development/public/<script>") == "other")
        #expect(RequestStatisticsMiddleware.operation(ofPath: "/assets/1/download/x/y") == "assets/download")
        #expect(RequestStatisticsMiddleware.operation(ofPath: "/dashboard/live") == "dashboard")
        #expect(RequestStatisticsMiddleware.operation(ofPath: "/") == "dashboard")
        #expect(RequestStatisticsMiddleware.operation(ofPath: "/../../etc") == "other")
    }
}

/// The live page's log tail.
@Suite("Log tail")
struct LogTailTests {
    @Test("a logger writing to the tail keeps its last lines, with metadata")
    func keepsLastLines() {
        let tail = LogTail(capacity: 3)
        var logger = Logger(label: "test") { tail.handler(label: $0) }
        logger.logLevel = .debug
        for index in 0..<10 { logger.info("line \(index)", metadata: ["n": "\(index)"]) }
        let lines = tail.recentLines
        #expect(lines.count <= 6)
        #expect(lines.last?.hasSuffix("info test: line 9 n=9") == true)
    }
}
