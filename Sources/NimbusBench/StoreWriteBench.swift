import ArgumentParser
import Foundation
import NimbusProtocol
import NimbusSQLite
import NimbusStore

/// `nimbus-bench store-write`: how long one `records/modify` transaction holds the embedded
/// SQLite store's writer, alone (no HTTP, no server). SQLite has one writer, so another
/// user's write that arrives meanwhile waits for all of it: this is the wait the fairness
/// bench's quiet user meets beside a flood of large batches.
///
/// Each transaction creates `--records` records like the fairness flood's (six fields: two
/// STRING, INT64, DOUBLE, TIMESTAMP, STRING_LIST), in one zone of one private database.
struct StoreWriteBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store-write",
        abstract: "Time one records/modify transaction holds the SQLite store's writer, per batch size.")

    @Option(name: .customLong("records-per-transaction"), help: "Records created per transaction.") var records = 200
    @Option(name: .customLong("transactions"), help: "Transactions to time (after 20 to warm up).") var transactions = 300

    func run() async throws {
        let directory = NSTemporaryDirectory() + "nimbus-store-write-bench-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(directory: directory)
        defer { try? store.close() }
        let database = DatabaseKey(
            container: "iCloud.bench", environment: .development, scope: .private, owner: "_bench_writer")
        _ = try await store.modifyZones([.create(zoneName: "flood")], caller: nil, in: database)
        let caller = Caller(userRecordName: "_bench_writer", deviceID: "bench")

        var latencies: [Double] = []
        let cpu = processCPU()
        for round in 0..<(transactions + 20) {
            let operations = (0..<records).map { index in
                RecordOperation(type: .create, record: Self.record(named: "r\(round)-\(index)", index: index))
            }
            let policy = WritePolicy(creatorOnlyWrites: false, now: Int64(Date().timeIntervalSince1970 * 1000))
            let start = ContinuousClock.now
            let outcome = try await store.modifyRecords(
                operations, zone: "flood", atomic: false, policy: policy, caller: caller, in: database)
            let elapsed = (ContinuousClock.now - start).seconds * 1000
            guard outcome.commit != nil else { throw ValidationError("a bench transaction wrote nothing") }
            if round >= 20 { latencies.append(elapsed) }
        }
        let end = processCPU()
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies[min(latencies.count - 1, Int((p / 100 * Double(latencies.count)).rounded(.up)) - 1)]
        }
        let written = Double((transactions + 20) * records)
        let cpuMicros = (end.user + end.system - cpu.user - cpu.system) * 1e6 / written
        print(
            "store-write: \(transactions) transactions of \(records) created records: "
                + String(
                    format: "p50 %.3f  p90 %.3f  p99 %.3f ms per transaction; %.2f µs per record at p50; %.2f µs CPU per record",
                    percentile(50), percentile(90), percentile(99), percentile(50) * 1000 / Double(records), cpuMicros))
    }

    /// One record of the fairness flood's shape (``BenchClient/createBody(zone:prefix:range:)``).
    static func record(named name: String, index: Int) -> Record {
        Record(
            recordName: name, recordType: "Note",
            fields: [
                "title": .string("Note number \(index)"),
                "body": .string(
                    "Remember to water the plants, call the plumber about the leak, and buy milk — item \(index)."),
                "priority": .int64(Int64(index % 5)),
                "score": .double(Double(index) * 0.25 + 0.5),
                "due": .timestamp(1_790_000_000_000 + Int64(index) * 60_000),
                "tags": .list(elementType: .string, [.string("bench"), .string("note"), .string("\(index % 10)")]),
            ])
    }
}
