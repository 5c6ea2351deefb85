import ArgumentParser
import Foundation
import NimbusSQLite
import NimbusStore

/// `nimbus-bench trace-store`: what writing the spans of traced requests costs the embedded
/// SQLite store, alone (no HTTP, no server), so a change to the trace file's layout can be
/// measured to the microsecond where the whole bench's noise is a few percent.
///
/// Each request leaves what a traced `records/modify` leaves: a request span naming `--names`
/// records and its `commit` child, written in batches of `--batch` requests (the journal's
/// 20 ms flush held about 18 single-record requests at full speed, its 50 ms one about 45, or
/// one 200-record request).
struct TraceStoreBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace-store",
        abstract: "CPU per traced request of writing its spans to the SQLite trace file, and record lookups.")

    @Option(name: .customLong("traced-requests"), help: "Traced requests to write.") var requests = 30_000
    @Option(name: .customLong("names-per-request"), help: "Records each request names (random UUID names).") var names = 1
    @Option(name: .customLong("requests-per-write"), help: "Requests per write (per journal flush).") var batch = 18

    func run() async throws {
        let directory = NSTemporaryDirectory() + "nimbus-trace-bench-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(directory: directory)
        defer { try? store.close() }

        var batches: [[TraceSpan]] = []
        var someNames: [String] = []
        var now: Int64 = 1_790_000_000_000_000
        for _ in 0..<(requests / max(1, batch)) {
            var spans: [TraceSpan] = []
            for _ in 0..<batch {
                now += 1_100
                let trace = BenchClient.randomHex(digits: 32)
                let request = BenchClient.randomHex(digits: 16)
                let recordNames = (0..<names).map { _ in UUID().uuidString }
                if someNames.count < 100, let name = recordNames.first { someNames.append(name) }
                spans.append(
                    TraceSpan(
                        traceID: trace, spanID: BenchClient.randomHex(digits: 16), parentSpanID: request, name: "commit",
                        source: "server bench", startMicros: now + 300, endMicros: now + 700,
                        message: "committed; no subscription matched, so no device is notified",
                        attributes: ["container": "iCloud.bench", "database": "private", "version": "\(now)", "notifications": "0"]))
                spans.append(
                    TraceSpan(
                        traceID: trace, spanID: request, parentSpanID: BenchClient.randomHex(digits: 16),
                        name: "records/modify", source: "server bench", startMicros: now, endMicros: now + 1_000,
                        attributes: [
                            "container": "iCloud.bench", "environment": "development", "database": "private",
                            "zone": "Bench", "records": String(names), "user": "_b4c3f1e2d9a8", "status": "200",
                            "request_id": BenchClient.randomHex(digits: 16),
                        ],
                        recordNames: recordNames))
            }
            batches.append(spans)
        }

        // The rows and their JSON alone, without SQLite: the Swift side of a write.
        let encodeStart = processCPU()
        var encodedBytes = 0
        for spans in batches {
            for row in TraceSpanRows.rows(of: spans) {
                encodedBytes += row.span.attributesJSON.utf8.count + row.span.recordNamesJSON.utf8.count
                    + (row.childrenJSON?.utf8.count ?? 0)
            }
        }
        let encodeEnd = processCPU()
        let encodeMicros =
            (encodeEnd.user + encodeEnd.system - encodeStart.user - encodeStart.system) * 1e6
            / Double(max(1, batches.count * batch))

        let cpu = processCPU()
        let start = ContinuousClock.now
        for spans in batches { try await store.appendTraceSpans(spans) }
        let wall = (ContinuousClock.now - start).seconds
        let written = batches.count * batch
        let end = processCPU()
        let cpuMicros = (end.user + end.system - cpu.user - cpu.system) * 1e6 / Double(max(1, written))
        let systemMicros = (end.system - cpu.system) * 1e6 / Double(max(1, written))

        let lookupStart = ContinuousClock.now
        var found = 0
        for name in someNames { found += try await store.traceIDs(touchingRecord: name, limit: 10).count }
        let lookupMillis = (ContinuousClock.now - lookupStart).seconds * 1000 / Double(max(1, someNames.count))

        print(
            "trace-store: \(written) requests, \(names) name(s) each, \(batch) per write: "
                + String(format: "%.1f µs CPU per request (%.1f in the kernel; %.2f µs per name), %.0f requests/s; ",
                    cpuMicros, systemMicros, cpuMicros / Double(max(1, names)), Double(written) / wall)
                + String(format: "lookup by record name %.3f ms (%d of %d found); ", lookupMillis, found, someNames.count)
                + String(format: "laying out the rows and their JSON alone: %.1f µs per request (%d bytes)", encodeMicros, encodedBytes))
    }
}
