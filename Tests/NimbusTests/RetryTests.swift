import Foundation
import Nimbus
import Testing

@Suite("Retries")
struct RetryTests {
    /// Records the waits a retrier asks for instead of waiting.
    final class Sleeps: Sendable {
        private let log = Locked<[Duration]>([])
        var all: [Duration] { log.withLock { $0 } }
        var sleep: @Sendable (Duration) async throws -> Void {
            { duration in self.log.withLock { $0.append(duration) } }
        }
    }

    @Test func backoffGrowsExponentiallyWithinItsJitterAndCap() {
        let policy = RetryPolicy(
            maxAttempts: 10, initialBackoff: .seconds(1), maximumBackoff: .seconds(10), multiplier: 2, jitter: 0.5)
        // random = 1: the full wait; random = 0: the wait less its jitter share.
        #expect(policy.delay(afterFailure: 1, random: 1) == .seconds(1))
        #expect(policy.delay(afterFailure: 2, random: 1) == .seconds(2))
        #expect(policy.delay(afterFailure: 3, random: 1) == .seconds(4))
        #expect(policy.delay(afterFailure: 5, random: 1) == .seconds(10))  // capped
        #expect(policy.delay(afterFailure: 9, random: 1) == .seconds(10))
        #expect(policy.delay(afterFailure: 3, random: 0) == .seconds(2))
        #expect(policy.delay(afterFailure: 3, random: 0.5) == .seconds(3))
        let noJitter = RetryPolicy(initialBackoff: .seconds(1), jitter: 0)
        #expect(noJitter.delay(afterFailure: 2, random: 0) == noJitter.delay(afterFailure: 2, random: 0.99))
    }

    @Test func serverRetryAfterWinsOverBackoff() {
        let policy = RetryPolicy(initialBackoff: .milliseconds(100))
        let throttled = NimbusError(.requestRateLimited, "slow down", retryAfterSeconds: 30)
        #expect(policy.delay(afterFailure: 1, error: throttled, random: 0) == .seconds(30))
    }

    @Test func retriesRetryableErrorsThenSucceeds() async throws {
        let transport = TestTransport(responses: [
            .error(.throttled, retryAfter: 2), .error(.tryAgainLater), .json(["zones": []]),
        ])
        let sleeps = Sleeps()
        let retrier = Retrier(
            policy: RetryPolicy(maxAttempts: 5, initialBackoff: .seconds(1), jitter: 0), sleep: sleeps.sleep,
            random: { 0 })
        let database = makeContainer(transport).privateCloudDatabase
        let zones = try await retrier.run { try await database.allRecordZones() }
        #expect(zones.isEmpty)
        #expect(transport.requests.count == 3)
        #expect(sleeps.all == [.seconds(2), .seconds(2)])  // retryAfter, then 1 s doubled
    }

    @Test func stopsAfterMaxAttempts() async throws {
        let transport = TestTransport(responses: [.error(.tryAgainLater)])
        let sleeps = Sleeps()
        let retrier = Retrier(policy: RetryPolicy(maxAttempts: 3), sleep: sleeps.sleep, random: { 0.5 })
        let database = makeContainer(transport).privateCloudDatabase
        let error = try await #require(throws: NimbusError.self) {
            try await retrier.run { try await database.allRecordZones() }
        }
        #expect(error.code == .serviceUnavailable)
        #expect(transport.requests.count == 3)
        #expect(sleeps.all.count == 2)
    }

    @Test func doesNotRetryErrorsThatCannotSucceed() async throws {
        let transport = TestTransport(responses: [.error(.badRequest)])
        let sleeps = Sleeps()
        let retrier = Retrier(sleep: sleeps.sleep)
        let database = makeContainer(transport).privateCloudDatabase
        await #expect(throws: NimbusError.self) { try await retrier.run { try await database.allRecordZones() } }
        #expect(transport.requests.count == 1)
        #expect(sleeps.all.isEmpty)
    }

    @Test func splitsBatchesOnLimitExceeded() async throws {
        // The "server" accepts at most 3 operations per request.
        let transport = TestTransport { request in
            let body = try JSON.parse(Array(request.body!))
            let operations = body["operations"]!.array!
            guard operations.count <= 3 else { return .error(.limitExceeded, "too many") }
            return .json(["records": .array(operations.map { serverRecordJSON($0["record"]!["recordName"]!.string!) })])
        }
        let database = makeContainer(transport).privateCloudDatabase
        let records = (0..<10).map { Record(recordType: "T", recordID: Record.ID(recordName: "r\($0)")) }
        let retrier = Retrier(sleep: Sleeps().sleep)
        let batches = try await retrier.runBatched(records) { batch in
            try await database.modifyRecords(saving: batch, atomically: false).saveResults
        }
        let saved = batches.reduce(into: [Record.ID: Result<Record, NimbusError>]()) { $0.merge($1) { a, _ in a } }
        #expect(saved.count == 10)
        #expect(saved.values.allSatisfy { (try? $0.get()) != nil })
        #expect(batches.count == 4)  // 10 → 5 + 5 → (2 + 3) + (2 + 3)
        let sizes = transport.bodies.map { $0["operations"]!.array!.count }
        #expect(sizes == [10, 5, 2, 3, 5, 2, 3])
    }

    @Test func cancellationStopsTheWait() async throws {
        let attempts = EventLog()
        let transport = TestTransport { _ in
            attempts.append("attempt")
            return .error(.tryAgainLater, retryAfter: 3600)
        }
        let database = makeContainer(transport).privateCloudDatabase
        let retrier = Retrier()  // real sleeps: the task is cancelled during the hour-long wait
        let task = Task { try await retrier.run { try await database.allRecordZones() } }
        try await attempts.wait(forCount: 1)
        task.cancel()
        let error = try await #require(throws: NimbusError.self) { try await withTimeout { try await task.value } }
        #expect(error.code == .operationCancelled)
        #expect(attempts.events.count == 1)
    }
}
