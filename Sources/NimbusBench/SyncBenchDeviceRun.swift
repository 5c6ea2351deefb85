import Foundation
import NIOConcurrencyHelpers
import NimbusProtocol
import NimbusServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One run of the new device's process (`nimbus-bench sync-device`), followed from its
/// output; killed with SIGKILL once it has committed `killAfter` records, if given.
struct DeviceRun: Sendable {
    /// The child's `result` line; `nil` when it was killed.
    var result: JSON?
    /// Wall time from the start of the child to its end (process start included).
    var wallSeconds: Double
    /// CPU of this process (the embedded server) meanwhile.
    var serverCPUSeconds: Double
    /// CPU of the child, all of it (`RUSAGE_CHILDREN` once it was waited for).
    var clientCPUSeconds: Double
    /// Records the child had committed when it was killed (or at its end).
    var committed: Int
    /// What the first page's progress said the device would hold in all: the records
    /// committed then and the engine's ``FetchProgress/remainingEstimate`` (`nil` without one).
    var estimatedTotal: Int?
    /// The child's peak resident memory (`VmHWM`), bytes.
    var clientPeakBytes: Int

    static func run(_ arguments: [String], records: Int, label: String, killAfter: Int?) async throws -> DeviceRun {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let serverCPU = ProcessCPU.seconds()
        let childCPU = ProcessCPU.childrenSeconds()
        let started = ContinuousClock.now
        let process = try ChildProcess(executable: executable, arguments: arguments, output: .pipe)
        guard let output = process.standardOutput else { throw BenchError("no pipe from the device process") }
        let progress = Progress(label: label, total: records)
        let pid = process.processIdentifier
        let (result, committed, peak, estimatedTotal): (JSON?, Int, Int, Int?) = await withCheckedContinuation {
            continuation in
            Thread {
                var pending: [UInt8] = []
                var result: JSON?
                var estimatedTotal: Int?
                var committed = 0
                var peak = 0
                var killed = false
                while true {
                    let data = output.availableData
                    if data.isEmpty { break }
                    pending += data
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: pending[..<newline], as: UTF8.self)
                        pending.removeSubrange(...newline)
                        if line.hasPrefix("progress ") {
                            let fields = line.split(separator: " ")
                            committed = Int(fields[1]) ?? committed
                            if estimatedTotal == nil, fields.count > 3, let remaining = Int(fields[3]) {
                                estimatedTotal = committed + remaining
                            }
                            progress.update(committed)
                            if let killAfter, !killed, committed >= killAfter {
                                peak = Int(ProcessMemory(process: String(pid)).read()?.peakBytes ?? 0)
                                process.send(SIGKILL)
                                killed = true
                            }
                        } else if line.hasPrefix("result ") {
                            result = try? JSON.parse(Array(line.dropFirst("result ".count).utf8))
                        }
                    }
                }
                continuation.resume(returning: (result, committed, peak, estimatedTotal))
            }.start()
        }
        let status = process.waitUntilExit()
        progress.finish()
        let wall = (ContinuousClock.now - started).seconds
        if killAfter == nil, result == nil { throw BenchError("the device process ended without a result (status \(status))") }
        return DeviceRun(
            result: result, wallSeconds: wall, serverCPUSeconds: ProcessCPU.seconds() - serverCPU,
            clientCPUSeconds: ProcessCPU.childrenSeconds() - childCPU, committed: committed,
            estimatedTotal: estimatedTotal, clientPeakBytes: result?["peak_rss_bytes"]?.int64.map { Int($0) } ?? peak)
    }

    /// The sync's own time (the child's, from `sync()` to its return), else the wall time.
    var seconds: Double { result?["seconds"]?.double ?? wallSeconds }
    var cpuSeconds: Double { serverCPUSeconds + clientCPUSeconds }
    var clientPeakMB: Double { Double(clientPeakBytes) / 1_000_000 }
}

/// The initial sync's outcome: one run, or an interrupted run and its resumption.
struct InitialRun: Sendable {
    var run: DeviceRun
    var interrupted: DeviceRun?

    private func f(_ value: Double, _ decimals: Int = 1) -> String { String(format: "%.\(decimals)f", value) }

    func lines(records: Int) -> [String] {
        let result = run.result
        let readP99 = result?["read_p99_ms"]?.double ?? 0
        let reads = result?["reads"]?.int64.map { Int($0) } ?? 0
        let peakMB = max(run.clientPeakMB, interrupted?.clientPeakMB ?? 0)
        let engine = result?["engine"]?.string == "cloudkit" ? "NimbusCloudKit's CKSyncEngine" : "NimbusSync's SyncEngine"
        var lines: [String] = ["new device on \(engine)"]
        if let interrupted {
            let fetched = result?["records_fetched"]?.int64.map { Int($0) } ?? 0
            let share = Double(fetched) / Double(records)
            lines.append(
                "new device killed after committing \(interrupted.committed) of \(records) records (\(f(interrupted.wallSeconds, 2)) s); "
                    + "started again: fetched \(fetched) records (\(f(share * 100)) % of the zone) in \(f(run.seconds, 2)) s  "
                    + "[target ≤ 55 %: \(share <= 0.55 ? "met" : "MISSED")]")
        } else {
            lines.append(
                "new device syncs \(records) records from nothing: \(f(run.seconds, 2)) s "
                    + "(\(Int(Double(records) / run.seconds)) records/s; CPU \(f(run.cpuSeconds, 2)) s: client \(f(run.clientCPUSeconds, 2)) s, "
                    + "server \(f(run.serverCPUSeconds, 2)) s)"
                    + (records == 1_000_000 ? "  [target ≤ 15 s: \(run.seconds <= 15 ? "met" : "MISSED")]" : "")
                    + (records == 100_000 ? "  [target ≤ 5 s: \(run.seconds <= 5 ? "met" : "MISSED")]" : ""))
        }
        if let estimate = run.estimatedTotal {
            lines.append(
                "progress: after the first page the engine estimated \(estimate) records in all; the device ended with \(run.committed)")
        }
        lines.append(
            "client's peak resident memory (its own process): \(f(peakMB)) MB  [target ≤ 100 MB: \(peakMB <= 100 ? "met" : "MISSED")]")
        if reads > 0 {
            lines.append(
                "local reads by key while syncing: \(reads) reads, p50 \(f(result?["read_p50_ms"]?.double ?? 0, 3)) ms, "
                    + "p99 \(f(readP99, 3)) ms, max \(f(result?["read_max_ms"]?.double ?? 0, 3)) ms  "
                    + "[target p99 ≤ 5 ms: \(readP99 <= 5 ? "met" : "MISSED")]")
        }
        return lines
    }

    func json(records: Int) -> JSON {
        var object: [String: JSON] = [
            "records": .int(records), "seconds": .double(run.seconds), "cpu_seconds": .double(run.cpuSeconds),
            "client_cpu_seconds": .double(run.clientCPUSeconds), "server_cpu_seconds": .double(run.serverCPUSeconds),
            "client_peak_rss_mb": .double(max(run.clientPeakMB, interrupted?.clientPeakMB ?? 0)),
        ]
        if let result = run.result { object["device"] = result }
        if let estimate = run.estimatedTotal { object["estimated_total_after_first_page"] = .int(estimate) }
        if let interrupted {
            object["killed_after_records"] = .int(interrupted.committed)
            object["killed_run_seconds"] = .double(interrupted.wallSeconds)
            object["refetched_share"] = .double(Double(run.result?["records_fetched"]?.int64.map { Int($0) } ?? 0) / Double(records))
        }
        return .object(object)
    }
}
