import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore

/// `nimbus-bench fairness`: how much one user's flood slows another user's requests.
///
/// Starts an embedded server (a fresh SQLite directory, or a fresh PostgreSQL schema with
/// `--postgres-url`) with two users. The quiet user sends `--quiet-requests` single-record
/// `records/modify` requests one after another, first alone (idle), then beside the flooder,
/// who sends `records/modify` requests of `--flood-batch` records on `--flood-connections`
/// connections as fast as the server answers. Reports both latency distributions, the
/// ratio of the p99s (target: ≤ 2), and what the flooder got: requests answered, records
/// written, requests refused THROTTLED. The flooder runs in a child process
/// (`nimbus-bench fairness-flood`) unless `--flood-in-process`; server and clients still
/// share this machine's cores.
struct FairnessBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fairness",
        abstract: "Measure a user's single-record modify latency beside another user's flood (build with -c release).")

    @Option(name: .long, help: "Run on PostgreSQL (a postgres:// URL; a fresh schema, dropped afterwards).")
    var postgresURL: String?
    // Not `--samples`: the parent command's option of that name would take it.
    @Option(name: .long, help: "Single-record modifies the quiet user times, idle and beside the flood.")
    var quietRequests = 2_000
    @Option(
        name: .long,
        help: "Idle and flood phases, alternated, each timing --quiet-requests; the verdict is the median round's p99 ratio.")
    var rounds = 1
    @Option(name: .long, help: "Concurrent connections of the flooding user.")
    var floodConnections = 16
    @Option(name: .long, help: "Records per records/modify request of the flooding user (1...200).")
    var floodBatch = 20
    @Option(name: .long, help: "Pace the flood to about this many requests/s in all (0: as fast as the server answers).")
    var floodRate: Double = 0
    @Option(name: .long, help: "The server's cap on one user's requests running at once (0: none).")
    var userInFlight = ThrottleSettings().userInFlight
    @Option(name: .long, help: "The server's cap on one user's requests running at once beside another user's (0: none).")
    var contendedUserInFlight = ThrottleSettings().contendedUserInFlight

    @Option(
        name: .long,
        help: "Server: the rest a user with requests waiting takes beside others, as a share of its last request's time (0: none).")
    var contendedRest = ThrottleSettings().contendedRest
    @Flag(name: .long, help: "Server: run a flooding user's requests at the usual CPU priority, not in the background lane.")
    var noBackgroundLane = false
    @Option(
        name: .long,
        help: "Server: in the background lane, the most records one transaction of a non-atomic batch writes (0: whole batches).")
    var backgroundTransactionRecords = ThrottleSettings().backgroundTransactionRecords
    @Flag(name: .long, help: "Run the server with throttling off (rate limits and in-flight caps), for comparison.")
    var noThrottle = false
    @Flag(name: .long, help: "Run the flooding client in this process (default: a process of its own, as a device elsewhere).")
    var floodInProcess = false
    // Not `--json`: `nimbus-bench`'s own flag of that name would take it.
    @Flag(name: .customLong("json-output"), help: "Print the results as JSON.")
    var json = false

    func validate() throws {
        guard quietRequests >= 100 else { throw ValidationError("--quiet-requests must be at least 100") }
        guard (1...100).contains(rounds) else { throw ValidationError("--rounds must be within 1...100") }
        guard floodRate >= 0 else { throw ValidationError("--flood-rate must be 0 (no pacing) or more") }
        guard floodConnections >= 1 else { throw ValidationError("--flood-connections must be positive") }
        guard (1...200).contains(floodBatch) else { throw ValidationError("--flood-batch must be within 1...200") }
        guard userInFlight >= 0, contendedUserInFlight >= 0 else {
            throw ValidationError("--user-in-flight and --contended-user-in-flight must be 0 (no cap) or more")
        }
    }

    func run() async throws {
        #if DEBUG
        FileHandle.standardError.write(Data("warning: this is a debug build; measure with `swift build -c release`\n".utf8))
        #endif
        MallocTuning.apply()
        let runID = String(UUID().uuidString.prefix(8)).lowercased()
        var logger = Logger(label: "nimbus")
        logger.logLevel = .warning
        var configuration = ServerConfiguration(port: 0)
        if let postgresURL {
            configuration.storage = .postgres(url: postgresURL, schema: "nimbus_bench_\(runID)")
        } else {
            configuration.storage = .sqlite(
                directory: FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-fair-\(runID)").path)
        }
        configuration.throttle.enabled = !noThrottle
        configuration.throttle.userInFlight = userInFlight
        configuration.throttle.contendedUserInFlight = contendedUserInFlight
        configuration.throttle.contendedRest = contendedRest
        configuration.throttle.backgroundLane = !noBackgroundLane
        configuration.throttle.backgroundTransactionRecords = backgroundTransactionRecords
        let server = try await RunningServer.start(configuration, logger: logger)
        // The quiet user's connection on an event loop of its own, not behind the flood's.
        let quietLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let quietHTTP = HTTPClient(eventLoopGroupProvider: .shared(quietLoop))
        var floodConfiguration = HTTPClient.Configuration()
        floodConfiguration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: floodConnections)
        let floodHTTP = HTTPClient(eventLoopGroupProvider: .singleton, configuration: floodConfiguration)
        let report: FairnessRounds
        do {
            report = try await measure(server: server, quietHTTP: quietHTTP, floodHTTP: floodHTTP, runID: runID)
        } catch {
            try? await quietHTTP.shutdown()
            try? await floodHTTP.shutdown()
            try? await server.stop()
            try? await configuration.storage.removeAll(logger: logger)
            try? await quietLoop.shutdownGracefully()
            throw error
        }
        try await quietHTTP.shutdown()
        try await floodHTTP.shutdown()
        try await server.stop()
        try await configuration.storage.removeAll(logger: logger)
        try await quietLoop.shutdownGracefully()
        let machine = MachineInfo.current()
        let engine = postgresURL == nil ? "sqlite" : "postgres"
        if json {
            print(JSON.object(["machine": machine.json, "engine": .string(engine), "fairness": report.json]).serialized())
        } else {
            print("Nimbus fairness bench — \(machine.summary)")
            print("engine: \(engine); throttling \(noThrottle ? "off" : "on, user in-flight cap \(userInFlight), \(contendedUserInFlight) beside other users, rest \(contendedRest), background lane \(noBackgroundLane ? "off" : "on, transactions of \(backgroundTransactionRecords == 0 ? "whole batches" : "≤ \(backgroundTransactionRecords) records")")"); "
                + "load average at the end: \(machine.loadAverage)")
            print(report.text)
        }
        fflush(nil)
    }

    private func measure(server: RunningServer, quietHTTP: HTTPClient, floodHTTP: HTTPClient, runID: String)
        async throws -> FairnessRounds
    {
        let credentials = try await BenchCommand.provision(server.store, runID: runID)
        let flooderToken = try await server.store.createUser(
            name: "flood-\(runID)", email: nil, firstName: "Flood", lastName: nil, container: credentials.container)
        var flooderCredentials = credentials
        flooderCredentials.webAuthToken = flooderToken.token
        let quiet = BenchClient(http: quietHTTP, baseURL: server.baseURL, credentials: credentials)
        let flooder = BenchClient(http: floodHTTP, baseURL: server.baseURL, credentials: flooderCredentials)
        try await quiet.createZone("quiet")
        for index in 0..<200 {  // warm up
            _ = try await quiet.createBatch(zone: "quiet", prefix: "warm", range: index..<(index + 1))
        }
        var reports: [FairnessReport] = []
        for round in 1...rounds {
            // A zone and names of its own each round: every request creates new records.
            let zone = rounds == 1 ? "flood" : "flood-\(round)"
            try await flooder.createZone(zone)
            let suffix = rounds == 1 ? "" : "-\(round)-"
            reports.append(
                try await measureRound(
                    quiet: quiet, flooder: flooder, flooderCredentials: flooderCredentials, server: server, zone: zone,
                    suffix: suffix))
        }
        return FairnessRounds(reports: reports)
    }

    /// The quiet user alone, then beside a flood into `zone`.
    private func measureRound(
        quiet: BenchClient, flooder: BenchClient, flooderCredentials: BenchCredentials, server: RunningServer,
        zone: String, suffix: String
    ) async throws -> FairnessReport {
        let idle = try await latencies(quiet, prefix: "idle" + suffix)
        let flood: any FloodSource =
            floodInProcess
            ? InProcessFlood(flooder, zone: zone, connections: floodConnections, batch: floodBatch, rate: floodRate)
            : try FloodProcess(
                baseURL: server.baseURL, credentials: flooderCredentials, zone: zone, connections: floodConnections,
                batch: floodBatch, rate: floodRate)
        // Let the flood reach its pace before timing.
        while try flood.tally().answered < floodConnections * 10 {
            try await Task.sleep(for: .milliseconds(10))
        }
        let busyStart = ContinuousClock.now
        let startTally = try flood.tally()
        let busy: [Double]
        do {
            busy = try await latencies(quiet, prefix: "busy" + suffix)
        } catch {
            await flood.stop()
            throw error
        }
        let busySeconds = (ContinuousClock.now - busyStart).seconds
        let endTally = try flood.tally()
        await flood.stop()
        return FairnessReport(
            idle: idle, busy: busy, floodSeconds: busySeconds, flood: endTally.minus(startTally),
            floodConnections: floodConnections, floodBatch: floodBatch)
    }

    /// `quietRequests` single-record modifies one after another, in milliseconds, sorted.
    ///
    /// On Linux they go out on a blocking socket from a thread of their own, timed from the
    /// request's send to the kernel's arrival stamp of the answer: the server's latency as the
    /// network sees it, without the wake-ups of this process's task pool, which the embedded
    /// server keeps busy (a quiet device is elsewhere).
    private func latencies(_ client: BenchClient, prefix: String) async throws -> [Double] {
        #if os(Linux)
        let count = quietRequests
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try Self.socketLatencies(client, prefix: prefix, count: count) })
            }.start()
        }
        #else
        var latencies: [Double] = []
        latencies.reserveCapacity(quietRequests)
        for index in 0..<quietRequests {
            let begin = ContinuousClock.now
            let outcome = try await client.createBatch(zone: "quiet", prefix: prefix, range: index..<(index + 1))
            latencies.append((ContinuousClock.now - begin).seconds * 1000)
            guard outcome.failed == 0 else {
                throw BenchError("the quiet user's modify failed: \(outcome.firstError ?? "?")")
            }
        }
        return latencies.sorted()
        #endif
    }

    #if os(Linux)
    private static func socketLatencies(_ client: BenchClient, prefix: String, count: Int) throws -> [Double] {
        let connection = try BenchHTTPConnection(client.baseURL)
        let target = String(client.url("records/modify").dropFirst(client.baseURL.count))
        let headers = [("X-Nimbus-Device-ID", "nimbus-bench")]
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        for index in 0..<count {
            let body = BenchClient.createBody(zone: "quiet", prefix: prefix, range: index..<(index + 1))
            let answer = try connection.post(target, headers: headers, body: body)
            latencies.append(Double(answer.arrival.kernel - answer.sent) / 1e6)
            let outcome = BenchClient.outcome(status: answer.status, json: try JSON.parse(answer.body), operations: 1)
            guard outcome.failed == 0 else {
                throw BenchError("the quiet user's modify failed: \(outcome.firstError ?? "?")")
            }
        }
        return latencies.sorted()
    }
    #endif
}

/// What the flooder's requests got.
struct FloodTally: Sendable {
    var answered = 0
    var ok = 0
    var throttled = 0
    var other = 0
    var records = 0

    mutating func count(status: Int, records: Int) {
        answered += 1
        switch status {
        case 200:
            ok += 1
            self.records += records
        case 429: throttled += 1
        default: other += 1
        }
    }

    func minus(_ earlier: FloodTally) -> FloodTally {
        FloodTally(
            answered: answered - earlier.answered, ok: ok - earlier.ok, throttled: throttled - earlier.throttled,
            other: other - earlier.other, records: records - earlier.records)
    }
}

struct FairnessReport: Sendable {
    var idle: [Double]
    var busy: [Double]
    var floodSeconds: Double
    var flood: FloodTally
    var floodConnections: Int
    var floodBatch: Int

    static func percentile(_ sorted: [Double], _ p: Double) -> Double { NimbusBench.percentile(sorted: sorted, p) }

    var ratio: Double { Self.percentile(busy, 99) / Self.percentile(idle, 99) }

    var text: String {
        func line(_ name: String, _ values: [Double]) -> String {
            let f = { BenchResult.format($0, 3) }
            return "  \(name)  p50 \(f(Self.percentile(values, 50)))  p90 \(f(Self.percentile(values, 90)))  "
                + "p99 \(f(Self.percentile(values, 99)))  max \(f(values.last ?? 0))  ms (\(values.count) requests)"
        }
        let verdict = ratio <= 2 ? "met" : "MISSED"
        return """
            quiet user's single-record modify:
            \(line("idle        ", idle))
            \(line("beside flood", busy))
              p99 beside the flood / idle p99: \(BenchResult.format(ratio, 2))×  (target ≤ 2×: \(verdict))
            flooder (\(floodConnections) connections, \(floodBatch) records/request) while the quiet user was timed:
              \(flood.answered) requests in \(BenchResult.format(floodSeconds, 2)) s \
            (\(Int((Double(flood.answered) / floodSeconds).rounded())) requests/s, \
            \(Int((Double(flood.records) / floodSeconds).rounded())) records/s); \
            \(flood.throttled) THROTTLED, \(flood.other) other errors
            """
    }

    var json: JSON {
        func summary(_ values: [Double]) -> JSON {
            .object([
                "p50": .double(Self.percentile(values, 50)), "p90": .double(Self.percentile(values, 90)),
                "p99": .double(Self.percentile(values, 99)), "max": .double(values.last ?? 0),
                "requests": .int(values.count),
            ])
        }
        return .object([
            "idleMillis": summary(idle), "besideFloodMillis": summary(busy), "p99Ratio": .double(ratio),
            "flood": .object([
                "connections": .int(floodConnections), "batch": .int(floodBatch), "seconds": .double(floodSeconds),
                "requests": .int(flood.answered), "ok": .int(flood.ok), "throttled": .int(flood.throttled),
                "otherErrors": .int(flood.other), "records": .int(flood.records),
            ]),
        ])
    }
}

/// The rounds of a run. One round reads as before; with more, each round's ratio is listed
/// and the verdict is the median round's (a single run's p99 moves with the host's noise).
struct FairnessRounds: Sendable {
    var reports: [FairnessReport]

    /// The median of the rounds' p99 ratios (the mean of the middle two for an even count).
    var medianRatio: Double {
        let ratios = reports.map(\.ratio).sorted()
        let middle = ratios.count / 2
        return ratios.count % 2 == 1 ? ratios[middle] : (ratios[middle - 1] + ratios[middle]) / 2
    }

    var text: String {
        guard reports.count > 1 else { return reports.first?.text ?? "" }
        let rounds = reports.enumerated().map { "round \($0.offset + 1):\n" + $0.element.text }.joined(separator: "\n")
        let ratios = reports.map { BenchResult.format($0.ratio, 2) }.joined(separator: " ")
        let verdict = medianRatio <= 2 ? "met" : "MISSED"
        return rounds + "\n"
            + "p99 ratios of the \(reports.count) rounds: \(ratios)\n"
            + "median round's p99 beside the flood / idle p99: \(BenchResult.format(medianRatio, 2))×  (target ≤ 2×: \(verdict))"
    }

    var json: JSON {
        guard reports.count > 1 else { return reports.first?.json ?? .null }
        return .object(["rounds": .array(reports.map(\.json)), "medianP99Ratio": .double(medianRatio)])
    }
}

/// Where the flood runs: asked for its tally, stopped at the end.
protocol FloodSource: Sendable {
    func tally() throws -> FloodTally
    func stop() async
}

extension FloodProcess: FloodSource {}

/// The flooder in the bench's own process (`--flood-in-process`).
final class InProcessFlood: FloodSource {
    private let stopFlag = NIOLockedValueBox(false)
    private let counts = NIOLockedValueBox(FloodTally())
    private let task: Task<Void, Never>

    init(_ flooder: BenchClient, zone: String, connections: Int, batch: Int, rate: Double) {
        let stopFlag = stopFlag
        let counts = counts
        task = Task {
            await FairnessFlood.run(
                flooder, zone: zone, connections: connections, batch: batch, rate: rate, stop: stopFlag, tally: counts)
        }
    }

    func tally() -> FloodTally { counts.withLockedValue { $0 } }

    func stop() async {
        stopFlag.withLockedValue { $0 = true }
        await task.value
    }
}
