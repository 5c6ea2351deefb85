import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusCloudKit
import NimbusProtocol
import NimbusSync
import ReadingList

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `nimbus-bench sync-device` (hidden): the new device of `nimbus-bench sync`'s initial run,
/// in a process of its own, so that its resident memory and CPU are the client's alone. It
/// opens (or creates) a Reading List device in `--directory`, runs the launch sequence
/// (`sync()`), and meanwhile reads records of the store by key, as an app's screens do.
///
/// It writes lines to standard output: `progress RECORDS BYTES REMAINING` after each committed
/// page (REMAINING the engine's estimate of the rest, `-` without one; the
/// engine's ``FetchProgress``) and, at the end, `result JSON`. The parent may kill it at any
/// time; a device opened again on the same directory resumes from its last committed page.
struct SyncDeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync-device", abstract: "The client of `nimbus-bench sync` in its own process.",
        shouldDisplay: false)

    @Option(name: .customLong("device-server-url")) var serverURL: String
    @Option(name: .customLong("device-container")) var container: String
    @Option(name: .customLong("device-api-token")) var apiToken: String
    @Option(name: .customLong("device-web-auth-token")) var webAuthToken: String
    @Option(name: .customLong("device-directory"), help: "The device's directory (its local store); opened again when it exists.")
    var directory: String
    @Option(name: .customLong("device-zone-records"), help: "Records the zone holds (names bulk-0000000 …): the keys read while syncing.")
    var zoneRecords: Int
    @Option(name: .customLong("device-engine"), help: "sync (NimbusSync's SyncEngine) or cloudkit (NimbusCloudKit's CKSyncEngine).")
    var engine = "sync"
    @Option(name: .customLong("device-read-rate"), help: "Local reads by key per second while syncing (0: none).")
    var readRate = 200

    func run() async throws {
        let output = LineOutput()
        let outcome = engine == "cloudkit" ? try await runCloudKit(output) : try await runSyncEngine(output)
        output.line("result \(outcome.serialized())")
    }

    /// What every run reports: its times, counts, memory and the local reads.
    private func result(
        elapsed: Duration, cpu: Double, records: Int, bytes: Int, before: Int, held: Int, reads: LocalReader.Reads
    ) -> JSON {
        let memory = ProcessMemory().read()
        return .object([
            "engine": .string(engine), "seconds": .double(elapsed.seconds), "cpu_seconds": .double(cpu),
            "records_fetched": .int(records), "bytes_fetched": .int(bytes), "records_before": .int(before),
            "records_held": .int(held), "peak_rss_bytes": .int(Int(memory?.peakBytes ?? 0)), "reads": .int(reads.count),
            "read_p50_ms": .double(reads.summary.p50), "read_p99_ms": .double(reads.summary.p99),
            "read_max_ms": .double(reads.summary.max), "read_hits": .int(reads.hits),
        ])
    }

    private func runSyncEngine(_ output: LineOutput) async throws -> JSON {
        let resumed = FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent(Device.configurationFile))
        let device =
            resumed
            ? try Device.open(directory: directory)
            : try Device.initialize(
                directory: directory,
                configuration: DeviceConfiguration(
                    serverURL: serverURL, container: container, apiToken: apiToken, webAuthToken: webAuthToken,
                    deviceID: "device-new-\(UUID().uuidString.prefix(8))"))
        let zone = ReadingListSchema.bookmarksZone
        let before = try device.readingList.syncedRecordCount(zone: zone)
        let fetched = NIOLockedValueBox((records: 0, bytes: 0))
        let events = device.engine.events()
        let listener = Task {
            for await event in events {
                if case .fetchProgress(let progress) = event, progress.zone == zone {
                    fetched.withLockedValue { $0 = (progress.records, progress.bytes) }
                    let remaining = progress.remainingEstimate.map(String.init) ?? "-"
                    output.line("progress \(before + progress.records) \(progress.bytes) \(remaining)")
                }
            }
        }
        let store = device.engine.store
        let reader = LocalReader(records: zoneRecords, rate: readRate) { try store.record(zone: zone, name: $0) != nil }
        let started = ContinuousClock.now
        let cpuBefore = ProcessCPU.seconds()
        try await device.readingList.sync()
        let elapsed = ContinuousClock.now - started
        let cpu = ProcessCPU.seconds() - cpuBefore
        let reads = reader.stop()
        listener.cancel()
        let (records, bytes) = fetched.withLockedValue { $0 }
        return result(
            elapsed: elapsed, cpu: cpu, records: records, bytes: bytes, before: before,
            held: try device.readingList.syncedRecordCount(zone: zone), reads: reads)
    }

    private func runCloudKit(_ output: LineOutput) async throws -> JSON {
        guard let url = URL(string: serverURL) else { throw BenchError("not a URL: \(serverURL)") }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let offset = NIOLockedValueBox(0)
        let app = try CloudKitBenchApp(path: (directory as NSString).appendingPathComponent("app.sqlite")) { records in
            output.line("progress \(offset.withLockedValue { $0 } + records) 0")
        }
        let before = app.count
        offset.withLockedValue { $0 = before }
        let ckContainer = CKContainer(
            identifier: container,
            connection: NimbusConnection(serverURL: url, apiToken: apiToken, webAuthToken: webAuthToken))
        var configuration = CKSyncEngine.Configuration(
            database: ckContainer.privateCloudDatabase, stateSerialization: try app.savedState(), delegate: app)
        configuration.automaticallySync = false
        let syncEngine = CKSyncEngine(configuration)
        let reader = LocalReader(records: zoneRecords, rate: readRate) { try app.bookmark($0) != nil }
        let started = ContinuousClock.now
        let cpuBefore = ProcessCPU.seconds()
        try await syncEngine.fetchChanges()
        let elapsed = ContinuousClock.now - started
        let cpu = ProcessCPU.seconds() - cpuBefore
        let reads = reader.stop()
        return result(
            elapsed: elapsed, cpu: cpu, records: app.recordsFetched, bytes: 0, before: before, held: app.count,
            reads: reads)
    }
}

/// Lines to standard output, written whole (one `write` each) from any thread.
final class LineOutput: Sendable {
    private let lock = NIOLock()

    func line(_ text: String) {
        lock.withLock {
            let bytes = Array((text + "\n").utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
                if written <= 0 { return }
                offset += written
            }
        }
    }
}

/// An app reading its local store while the sync runs: `rate` reads per second, each of one
/// record by key (a random bookmark of the zone), on a thread of its own; each read's time
/// is kept.
final class LocalReader: Sendable {
    struct Reads: Sendable {
        var count: Int
        var hits: Int
        var summary: LatencySummary
    }

    private let running = NIOLockedValueBox(true)
    private let done = NIOLockedValueBox<Reads?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    init(records: Int, rate: Int, read: @escaping @Sendable (String) throws -> Bool) {
        guard rate > 0, records > 0 else {
            done.withLockedValue { $0 = Reads(count: 0, hits: 0, summary: LatencySummary([])) }
            finished.signal()
            return
        }
        let (running, done, finished) = (running, done, finished)
        let interval = 1.0 / Double(rate)
        Thread {
            var samples: [Double] = []
            var hits = 0
            var generator = SystemRandomNumberGenerator()
            var next = ContinuousClock.now
            while running.withLockedValue({ $0 }) {
                let name = String(format: "bulk-%07d", Int.random(in: 0..<records, using: &generator))
                let started = ContinuousClock.now
                let found = (try? read(name)) ?? false
                samples.append((ContinuousClock.now - started).milliseconds)
                if found { hits += 1 }
                next += .seconds(interval)
                let wait = next - ContinuousClock.now
                if wait > .zero { usleep(UInt32(wait.seconds * 1e6)) } else { next = ContinuousClock.now }
            }
            done.withLockedValue { $0 = Reads(count: samples.count, hits: hits, summary: LatencySummary(samples)) }
            finished.signal()
        }.start()
    }

    /// Stops reading; what the reads took.
    func stop() -> Reads {
        running.withLockedValue { $0 = false }
        finished.wait()
        return done.withLockedValue { $0! }
    }
}
