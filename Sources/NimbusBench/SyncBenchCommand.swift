import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import ReadingList
import ReadingListSandbox

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `nimbus-bench sync`: the sync engine end to end, on an embedded server and simulated
/// devices (real HTTP and WebSocket on 127.0.0.1).
///
/// - latency: a save on device A (local write + send) until the record is in device B's
///   local store (B fetches on the push), one save at a time; p50/p99.
/// - initial: a new device syncs a zone of `--records` records from nothing (setup, the
///   database changes, every page of the zone), with a progress display.
struct SyncBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Measure sync end to end: save on A → in B's local store, and a new device's initial sync.")

    @Option(name: .long, help: "Saves to time in the latency run (one at a time).")
    var saves = 1_000
    @Option(name: .long, help: "Untimed saves before the latency run.")
    var warmup = 50
    @Option(name: .long, help: "Records in the zone a new device syncs from nothing.")
    var zoneRecords = 100_000
    @Option(
        name: .long,
        help: "Comma-separated runs: latency,initial (and raw: the SDK alone paging through the zone, for reference).")
    var runs = "latency,initial"
    @Option(
        name: .long,
        help: "Kill the new device's process once it has committed this fraction of the zone (e.g. 0.5), then run it again on the same store: what the resumed sync fetches again.")
    var killAt: Double?
    @Option(
        name: .long,
        help: "The new device's engine: sync (NimbusSync's SyncEngine, the Reading List app) or cloudkit (NimbusCloudKit's CKSyncEngine, the app's own SQLite table).")
    var engine = "sync"
    @Option(name: .long, help: "Local reads by key per second on the new device while it syncs (0: none).")
    var readRate = 200
    @Flag(name: .customLong("keep"), help: "Keep the temporary directory.")
    var keepData = false
    @Flag(name: .customLong("json-output"), help: "Print the results as JSON.")
    var json = false

    func validate() throws {
        guard saves >= 1, records >= 1, warmup >= 0 else { throw ValidationError("--saves and --zone-records must be positive") }
        guard ["sync", "cloudkit"].contains(engine) else { throw ValidationError("--engine is sync or cloudkit") }
        if let killAt, !(killAt > 0 && killAt < 1) { throw ValidationError("--kill-at must be between 0 and 1") }
        for run in selectedRuns where !["latency", "initial", "raw"].contains(run) {
            throw ValidationError("unknown run '\(run)' in --runs; expected latency,initial")
        }
    }

    var selectedRuns: [String] { runs.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
    var records: Int { zoneRecords }

    func run() async throws {
        #if DEBUG
        FileHandle.standardError.write(Data("warning: this is a debug build; measure with `swift build -c release`\n".utf8))
        #endif
        let sandbox = try await Sandbox.start(name: "bench-sync")
        var lines: [String] = []
        var results: [String: JSON] = [:]
        do {
            if selectedRuns.contains("latency") {
                let summary = try await latencyRun(sandbox)
                lines.append(
                    "save on A → in B's local store (\(saves) saves, one at a time): p50 \(f(summary.p50)) ms, "
                        + "p90 \(f(summary.p90)) ms, p99 \(f(summary.p99)) ms, max \(f(summary.max)) ms, "
                        + "mean \(f(summary.mean)) ms  [target p99 ≤ 50 ms: \(summary.p99 <= 50 ? "met" : "MISSED")]")
                results["latency"] = .object([
                    "saves": .int(saves), "p50_ms": .double(summary.p50), "p90_ms": .double(summary.p90),
                    "p99_ms": .double(summary.p99), "max_ms": .double(summary.max), "mean_ms": .double(summary.mean),
                ])
            }
            if selectedRuns.contains("initial") {
                let initial = try await initialRun(sandbox)
                lines += initial.lines(records: records)
                results["initial"] = initial.json(records: records)
            }
        } catch {
            await sandbox.stop(keep: keepData)
            throw error
        }
        await sandbox.stop(keep: keepData)
        let machine = MachineInfo.current()
        if json {
            results["machine"] = machine.json
            print(JSON.object(results).serialized())
        } else {
            print("Sync benchmark on \(machine.summary)")
            for line in lines { print("  \(line)") }
        }
    }

    // MARK: - Latency

    private func latencyRun(_ sandbox: Sandbox) async throws -> LatencySummary {
        let a = try sandbox.device("A")
        let b = try sandbox.device("B")
        let feedA = await PushFeed.start(client: a.pushClient(), engine: a.engine)
        let feedB = await PushFeed.start(client: b.pushClient(), engine: b.engine)
        defer { Task { await feedA.stop(); await feedB.stop() } }
        try await feedA.waitUntilConnected()
        try await feedB.waitUntilConnected()
        try await a.readingList.sync()
        try await b.readingList.sync()

        let arrivals = ArrivalLog()
        let events = b.engine.events()
        let listener = Task {
            for await event in events {
                switch event {
                case .fetched(_, let saved, _): arrivals.record(saved.map(\.recordName))
                case .stateSaved: arrivals.record(["(state saved)"])
                default: break
                }
            }
        }
        defer { listener.cancel() }
        // The listener is registered once a fetch of B's is seen through it.
        let probe = arrivals.expect("(state saved)")
        try await b.readingList.fetch()
        _ = try await probe.value(timeout: .seconds(10))

        var latencies: [Double] = []
        latencies.reserveCapacity(saves)
        let total = warmup + saves
        let progress = Progress(label: "save on A → B's store", total: total)
        for i in 0..<total {
            let url = "https://bench.example.com/articles/\(i)"
            let id = Bookmark.id(for: url)
            let arrival = arrivals.expect(id)
            let started = ContinuousClock.now
            try a.readingList.add(url: url, title: "Article \(i)")
            try await a.readingList.send()
            let seen = try await arrival.value(timeout: .seconds(10))
            if i >= warmup { latencies.append((seen - started).milliseconds) }
            progress.update(i + 1)
        }
        progress.finish()
        return LatencySummary(latencies)
    }

    // MARK: - Initial sync

    private func initialRun(_ sandbox: Sandbox) async throws -> InitialRun {
        // Another user, whose ReadingList zone holds `records` bookmarks, written straight
        // through the SDK (not timed).
        let token = try await sandbox.addUser("bulk-reader")
        let writer = try sandbox.device("writer", webAuthToken: token)
        let database = writer.container.privateCloudDatabase
        _ = try await database.modifyRecordZones(
            saving: ReadingListSchema.zones.map { RecordZone(zoneName: $0) }, deleting: [])
        let seeding = Progress(label: "writing \(records) records on the server", total: records)
        let zoneID = ZoneID(zoneName: ReadingListSchema.bookmarksZone)
        let written = Counter()
        let batch = 200
        let records = self.records
        try await withThrowingTaskGroup(of: Void.self) { group in
            let batches = stride(from: 0, to: records, by: batch).map { $0..<min($0 + batch, records) }
            var next = 0
            func addBatch() {
                guard next < batches.count else { return }
                let range = batches[next]
                next += 1
                group.addTask {
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    let saving = range.map { i -> Nimbus.Record in
                        var record = Nimbus.Record(
                            recordType: ReadingListSchema.bookmarkType,
                            recordID: Nimbus.Record.ID(recordName: String(format: "bulk-%07d", i), zoneID: zoneID))
                        record.setFieldValue(.string("https://bench.example.com/bulk/\(i)"), forKey: "url")
                        record.setFieldValue(.string("Bulk article number \(i)"), forKey: "title")
                        record.setFieldValue(.timestamp(now), forKey: "addedAt")
                        record.setFieldValue(.timestamp(now), forKey: "editedAt")
                        return record
                    }
                    let results = try await database.modifyRecords(saving: saving, atomically: false)
                    for (_, result) in results.saveResults { _ = try result.get() }
                    seeding.update(written.add(range.count))
                }
            }
            for _ in 0..<4 { addBatch() }
            while try await group.next() != nil { addBatch() }
        }
        seeding.finish()

        if selectedRuns.contains("raw") {
            // Reference: the same pages through the SDK alone, nothing stored.
            let rawStarted = ContinuousClock.now
            var token: ServerChangeToken?
            var count = 0
            while true {
                let page = try await database.recordZoneChanges(inZoneWith: zoneID, since: token)
                count += page.modifications.count
                token = page.changeToken
                if !page.moreComing { break }
            }
            let raw = ContinuousClock.now - rawStarted
            FileHandle.standardError.write(Data("  SDK alone: \(count) records in \(String(format: "%.2f", raw.milliseconds / 1000)) s\n".utf8))
        }

        // The new device: nothing local, in a process of its own (`sync-device`), so that
        // its memory and CPU are the client's alone; this process is the server's.
        let directory = (sandbox.directory as NSString).appendingPathComponent("device-new")
        let arguments = [
            "sync-device", "--device-server-url", sandbox.server.baseURL, "--device-container", sandbox.container,
            "--device-api-token", sandbox.apiToken, "--device-web-auth-token", token, "--device-directory", directory,
            "--device-zone-records", String(records), "--device-read-rate", String(readRate), "--device-engine", engine,
        ]
        var interrupted: DeviceRun?
        if let killAt {
            interrupted = try await DeviceRun.run(arguments, records: records, label: "new device (killed at \(Int(killAt * 100)) %)", killAfter: Int((Double(records) * killAt).rounded(.up)))
        }
        let run = try await DeviceRun.run(arguments, records: records, label: interrupted == nil ? "new device syncing ReadingList (\(engine))" : "the same device, started again", killAfter: nil)
        guard run.result?["records_held"]?.int64 == Int64(records) else {
            throw BenchError("the new device holds \(run.result?["records_held"]?.int64.map { Int($0) } ?? -1) records, expected \(records)")
        }
        return InitialRun(run: run, interrupted: interrupted)
    }

    private func f(_ value: Double, _ decimals: Int = 1) -> String { String(format: "%.\(decimals)f", value) }
}

extension LatencySummary {
    /// Percentiles (nearest rank) of samples in milliseconds.
    init(_ samples: [Double]) {
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
            return sorted[Swift.min(sorted.count - 1, Swift.max(0, rank))]
        }
        self.init(
            p50: percentile(50), p90: percentile(90), p99: percentile(99), max: sorted.last ?? 0,
            mean: sorted.isEmpty ? 0 : sorted.reduce(0, +) / Double(sorted.count))
    }
}

/// Record names seen in B's fetched events, with when; waiters per name.
final class ArrivalLog: Sendable {
    private struct State {
        var seen: [String: ContinuousClock.Instant] = [:]
        var waiters: [String: CheckedContinuation<ContinuousClock.Instant, any Error>] = [:]
    }
    private let state = NIOLockedValueBox(State())

    struct Expectation {
        let log: ArrivalLog
        let name: String

        /// When the name arrived; throws after `timeout`.
        func value(timeout: Duration) async throws -> ContinuousClock.Instant {
            try await withThrowingTaskGroup(of: ContinuousClock.Instant.self) { group in
                group.addTask {
                    try await withTaskCancellationHandler {
                        try await withCheckedThrowingContinuation { continuation in log.wait(name, continuation) }
                    } onCancel: {
                        log.cancel(name)
                    }
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw BenchError("\(name) did not reach device B within \(timeout)")
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        }
    }

    /// Forgets an earlier arrival of `name`, then returns what to wait on.
    func expect(_ name: String) -> Expectation {
        state.withLockedValue { _ = $0.seen.removeValue(forKey: name) }
        return Expectation(log: self, name: name)
    }

    func record(_ names: [String]) {
        let now = ContinuousClock.now
        let ready = state.withLockedValue { state -> [CheckedContinuation<ContinuousClock.Instant, any Error>] in
            var ready: [CheckedContinuation<ContinuousClock.Instant, any Error>] = []
            for name in names {
                if let waiter = state.waiters.removeValue(forKey: name) { ready.append(waiter) } else { state.seen[name] = now }
            }
            return ready
        }
        for waiter in ready { waiter.resume(returning: now) }
    }

    fileprivate func wait(_ name: String, _ continuation: CheckedContinuation<ContinuousClock.Instant, any Error>) {
        let arrived = state.withLockedValue { state -> ContinuousClock.Instant? in
            if let at = state.seen.removeValue(forKey: name) { return at }
            state.waiters[name] = continuation
            return nil
        }
        if let arrived { continuation.resume(returning: arrived) }
    }

    fileprivate func cancel(_ name: String) {
        state.withLockedValue { $0.waiters.removeValue(forKey: name) }?.resume(throwing: CancellationError())
    }
}

/// CPU time this process used (user + system), in seconds: a measure that does not depend on
/// what else the machine runs.
enum ProcessCPU {
    static func seconds() -> Double { seconds(of: RUSAGE_SELF) }

    /// CPU time of this process's children that were waited for (user + system), seconds.
    static func childrenSeconds() -> Double { seconds(of: RUSAGE_CHILDREN) }

    #if canImport(Glibc)
    private static func seconds(of who: __rusage_who) -> Double {
        var usage = rusage()
        getrusage(who.rawValue, &usage)
        return total(usage)
    }
    #else
    private static func seconds(of who: Int32) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        return total(usage)
    }
    #endif

    private static func total(_ usage: rusage) -> Double {
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let value = NIOLockedValueBox(0)

    func add(_ n: Int) -> Int { value.withLockedValue { $0 += n; return $0 } }
}

/// A progress line on stderr: redrawn in place on a terminal, every 10% otherwise.
final class Progress: Sendable {
    let label: String
    let total: Int
    private let started = ContinuousClock.now
    private let lastShown = NIOLockedValueBox(-1)
    private let terminal = isatty(2) == 1

    init(label: String, total: Int) {
        self.label = label
        self.total = total
    }

    func update(_ done: Int) {
        let percent = total == 0 ? 100 : min(100, done * 100 / total)
        let line: String? = lastShown.withLockedValue { lastShown in
            guard percent != lastShown, terminal || percent / 10 != lastShown / 10 || lastShown < 0 else { return nil }
            lastShown = percent
            let width = 30
            let filled = width * percent / 100
            let bar = String(repeating: "█", count: filled) + String(repeating: "·", count: width - filled)
            let elapsed = (ContinuousClock.now - started).milliseconds / 1000
            return "  \(label) [\(bar)] \(done)/\(total) (\(percent)%) \(String(format: "%.1f", elapsed)) s"
        }
        guard let line else { return }
        FileHandle.standardError.write(Data((terminal ? "\r\(line)\u{1B}[K" : "\(line)\n").utf8))
    }

    func finish() {
        if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
