import Foundation
import NimbusProtocol

/// The requests `nimbus-bench growth` times at each size, all over HTTP as the bench user,
/// in the probe zone `g0`.
struct GrowthProbes: Sendable {
    let client: BenchClient
    let samples: Int
    static let zone = "g0"
    /// The probe zone's own records `b1001…` sort first above this `due` (``StoreWriteBenchCommand/record(named:index:)``).
    static let rangeStart: Int64 = 1_790_000_000_000 + 1_000 * 60_000

    /// Batched creates: 25 requests of 200, one after another; records per second.
    func writeRate(step: Int) async throws -> (rate: Double, created: Int) {
        let start = ContinuousClock.now
        var outcome = BatchOutcome()
        for request in 0..<25 {
            outcome.add(try await client.createBatch(zone: Self.zone, prefix: "w\(step)-", range: (request * 200)..<(request * 200 + 200)))
        }
        try Self.check(outcome)
        return (Double(outcome.saved) / (ContinuousClock.now - start).seconds, outcome.saved)
    }

    /// Single-record creates, one request at a time: p50 and p99 in ms.
    func modify(step: Int) async throws -> (p50: Double, p99: Double, created: Int) {
        var latencies: [Double] = []
        var outcome = BatchOutcome()
        for index in 0..<samples {
            let begin = ContinuousClock.now
            outcome.add(try await client.createBatch(zone: Self.zone, prefix: "s\(step)-", range: index..<(index + 1)))
            latencies.append((ContinuousClock.now - begin).seconds * 1000)
        }
        try Self.check(outcome)
        return (Self.percentile(latencies, 50), Self.percentile(latencies, 99), outcome.saved)
    }

    /// The first ten `records/changes` pages of 200 of the probe zone: the median page, ms.
    func changesPage() async throws -> Double {
        var token: String?
        var latencies: [Double] = []
        for _ in 0..<10 {
            let begin = ContinuousClock.now
            let body = try await client.changesBody(zone: Self.zone, since: token, limit: 200)
            let page = try BenchClient.decodeChangesPage(body)
            latencies.append((ContinuousClock.now - begin).seconds * 1000)
            guard page.recordNames.count == 200 else { throw BenchError("a changes page held \(page.recordNames.count) records, not 200") }
            token = page.syncToken
        }
        return Self.percentile(latencies, 50)
    }

    /// The first page (200) of an EQUALS query on an indexed INT64, and of a range sorted by
    /// an indexed TIMESTAMP: medians in ms over `samples / 10` runs each (after one run).
    func queries() async throws -> (equals: Double, range: Double) {
        let equals: JSON = [
            "recordType": "Note", "filterBy": [["comparator": "EQUALS", "fieldName": "priority", "fieldValue": ["value": 3]]],
        ]
        let range: JSON = [
            "recordType": "Note",
            "filterBy": [["comparator": "GREATER_THAN", "fieldName": "due", "fieldValue": ["value": .int(Self.rangeStart), "type": "TIMESTAMP"]]],
            "sortBy": [["fieldName": "due", "ascending": true]],
        ]
        return (try await query(equals), try await query(range))
    }

    /// Saves one record over HTTP (the development schema learns the type and its fields),
    /// then runs each query once so that the development environment creates its indexes.
    /// The records it created.
    func createIndexes() async throws -> Int {
        let outcome = try await client.createBatch(zone: Self.zone, prefix: "schema-", range: 0..<1)
        try Self.check(outcome)
        _ = try await queries()
        return outcome.saved
    }

    private func query(_ query: JSON) async throws -> Double {
        let body = JSON.object(["zoneID": ["zoneName": .string(Self.zone)], "query": query, "resultsLimit": 200]).serializedBytes()
        var latencies: [Double] = []
        for run in 0...max(3, samples / 10) {
            let begin = ContinuousClock.now
            let (status, json) = try await client.post("records/query", body)
            let elapsed = (ContinuousClock.now - begin).seconds * 1000
            guard status == 200, let records = json["records"]?.array, records.count == 200 else {
                throw BenchError("records/query answered \(status): \(json.serialized().prefix(300))")
            }
            if run > 0 { latencies.append(elapsed) }
        }
        return Self.percentile(latencies, 50)
    }

    static func check(_ outcome: BatchOutcome) throws {
        if outcome.failed > 0 { throw BenchError("\(outcome.failed) writes failed: \(outcome.firstError ?? "")") }
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double { NimbusBench.percentile(sorted: values.sorted(), p) }
}
