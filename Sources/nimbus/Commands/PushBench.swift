import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NimbusProtocol
import NimbusServer
import NimbusStore

/// `nimbus bench push`: push latency and the memory of idle push connections, against a
/// `nimbus serve` child process (so its memory is the server's alone). See `bench/README.md`.
struct PushBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Measure push latency (modify answer on A → push frame on B) and memory per idle WebSocket.",
        discussion: """
            Starts `nimbus serve` (this executable) on a fresh temporary data directory for each \
            measurement, connects real WebSocket clients from this process and reads the server's \
            resident memory from /proc. Build with -c release.
            """)

    @Option(name: .long, help: "Comma-separated numbers of connected devices for the latency runs.")
    var devices = "1,100,1000"
    @Option(name: .long, help: "Saves per second during each latency run.")
    var rate = 20
    @Option(name: .long, help: "Seconds of saving per latency run.")
    var duration = 10
    @Option(
        name: .long,
        help: "Who the devices are: 'user' (every device is the saving user's: each save pushes to all) or 'users' (one device per user: each save pushes to one).")
    var fanout = "user,users"
    @Option(name: .long, help: "Comma-separated numbers of idle authenticated WebSockets for the memory runs.")
    var idle = "1000,10000"
    // `--only` and `--json` belong to `nimbus bench`; these are the push bench's own.
    @Option(name: .long, help: "Comma-separated runs: latency,idle.")
    var runs = "latency,idle"
    @Flag(name: .long, help: "Print the results as JSON.")
    var printJSON = false
    // `--postgres` belongs to `nimbus bench` (a parent's option wins the parse).
    @Option(
        name: .customLong("postgres-url"),
        help: "Run the latency runs on PostgreSQL (a postgres:// URL; a fresh schema, dropped afterwards).")
    var postgres: String?
    @Option(
        name: .long,
        help: "With --postgres: server nodes. With 2, devices connect to node 1 and saves go through node 2, so every push crosses nodes.")
    var nodes = 1

    static func list(_ text: String) -> [Int] { text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func validate() throws {
        guard rate >= 1, duration >= 1 else { throw ValidationError("--rate and --duration must be positive") }
        guard nodes >= 1, nodes == 1 || postgres != nil else {
            throw ValidationError("--nodes above 1 needs --postgres-url (SQLite serves one node)")
        }
        for mode in fanout.split(separator: ",") where mode != "user" && mode != "users" {
            throw ValidationError("--fanout takes user and/or users")
        }
    }

    func run() async throws {
        #if DEBUG
        FileHandle.standardError.write(Data("warning: this is a debug build; measure with `swift build -c release`\n".utf8))
        #endif
        let runs = Set(self.runs.split(separator: ",").map(String.init))
        var latency: [PushLatencyResult] = []
        var memory: [IdleMemoryResult] = []
        if runs.contains("latency") {
            for mode in fanout.split(separator: ",").map(String.init) {
                for count in Self.list(devices) {
                    let result = try await PushLatencyRun(
                        devices: count, allOneUser: mode == "user", rate: rate, seconds: duration,
                        setup: ServerProcess.Setup(postgres: postgres, nodes: nodes)
                    ).run()
                    latency.append(result)
                    if !printJSON { print(result.line) }
                }
            }
        }
        if runs.contains("idle") {
            for count in Self.list(idle) {
                let result = try await IdleMemoryRun(connections: count).run()
                memory.append(result)
                if !printJSON { print(result.line) }
            }
        }
        let machine = MachineInfo.current()
        if printJSON {
            print(
                JSON.object([
                    "machine": machine.json, "latency": .array(latency.map(\.json)), "idle": .array(memory.map(\.json)),
                ]).serialized())
        } else {
            print("machine: \(machine.json.serialized())")
        }
    }
}

// MARK: - Server process

/// `nimbus serve` as child processes — one on a fresh SQLite data directory, or several
/// nodes on a fresh PostgreSQL schema — with a container and users provisioned through the
/// storage. Devices connect to the first node; saves go through the last, so with two nodes
/// every push crosses nodes (PostgreSQL LISTEN/NOTIFY).
final class ServerProcess: Sendable {
    let processes: [Process]
    let storage: StorageLocation
    /// Where devices connect (the first node).
    let baseURL: String
    /// Where saves go (the last node).
    let writeBaseURL: String
    let container = "iCloud.com.example.bench"
    let apiToken: String
    let store: any NimbusStorage

    private init(
        processes: [Process], storage: StorageLocation, baseURLs: [String], apiToken: String, store: any NimbusStorage
    ) {
        self.processes = processes
        self.storage = storage
        self.baseURL = baseURLs[0]
        self.writeBaseURL = baseURLs[baseURLs.count - 1]
        self.apiToken = apiToken
        self.store = store
    }

    /// Where a bench server keeps its data: SQLite, or `nodes` nodes on PostgreSQL.
    struct Setup: Sendable {
        var postgres: String?
        var nodes = 1

        var label: String { postgres == nil ? "sqlite" : "postgres, \(nodes) node\(nodes == 1 ? "" : "s")" }
    }

    /// Starts the server, runs `body`, stops it and removes its data, also when `body` throws.
    static func with<T>(_ setup: Setup, _ body: (ServerProcess) async throws -> T) async throws -> T {
        let server = try await start(setup)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    private static func start(_ setup: Setup) async throws -> ServerProcess {
        let id = String(UUID().uuidString.prefix(8)).lowercased()
        let storage: StorageLocation
        let storageArguments: [String]
        if let postgres = setup.postgres {
            storage = .postgres(url: postgres, schema: "nimbus_pushbench_\(id)")
            storageArguments = ["--postgres", postgres, "--postgres-schema", "nimbus_pushbench_\(id)"]
        } else {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-pushbench-\(id)").path
            storage = .sqlite(directory: directory)
            storageArguments = ["--data", directory]
        }
        var processes: [Process] = []
        var baseURLs: [String] = []
        do {
            for _ in 0..<max(1, setup.postgres == nil ? 1 : setup.nodes) {
                let (process, baseURL) = try await launch(storageArguments)
                processes.append(process)
                baseURLs.append(baseURL)
            }
            var logger = Logger(label: "nimbus-bench")
            logger.logLevel = .error
            let store = try await storage.open(logger: logger)
            let token = try await store.createContainer("iCloud.com.example.bench")
            return ServerProcess(
                processes: processes, storage: storage, baseURLs: baseURLs, apiToken: token.token, store: store)
        } catch {
            for process in processes { process.interrupt(); process.waitUntilExit() }
            throw error
        }
    }

    /// Starts one `nimbus serve` and waits for the URL it prints.
    private static func launch(_ storageArguments: [String]) async throws -> (Process, String) {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--port", "0", "--log-level", "error"] + storageArguments
        if let output = ProcessInfo.processInfo.environment["BENCH_HEAPTRACK"] {
            process.arguments = ["-o", output, executable] + (process.arguments ?? [])
            process.executableURL = URL(fileURLWithPath: "/usr/bin/heaptrack")
        }
        if let arenas = ProcessInfo.processInfo.environment["BENCH_MALLOC_ARENA_MAX"] {
            var environment = ProcessInfo.processInfo.environment
            environment["MALLOC_ARENA_MAX"] = arenas
            process.environment = environment
        }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // "Nimbus is listening on http://127.0.0.1:PORT (…)"
        let baseURL: String = try await withCheckedThrowingContinuation { continuation in
            Thread {
                var text = ""
                while true {
                    let data = output.fileHandleForReading.availableData
                    if data.isEmpty {
                        continuation.resume(throwing: BenchError("nimbus serve exited before listening: \(text)"))
                        return
                    }
                    text += String(decoding: data, as: UTF8.self)
                    if let range = text.range(of: #"http://[0-9.]+:[0-9]+"#, options: .regularExpression) {
                        continuation.resume(returning: String(text[range]))
                        return
                    }
                }
            }.start()
        }
        return (process, baseURL)
    }

    /// A new user's web auth token and record name.
    func user(_ name: String) async throws -> (token: String, recordName: String) {
        let issued = try await store.createUser(name: name, email: nil, firstName: nil, lastName: nil, container: container)
        return (issued.token, issued.user!.recordName)
    }

    /// Resident memory of the server process, in bytes.
    var residentBytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(processes[0].processIdentifier)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }

    func stop() async {
        try? await store.shutdown()
        for process in processes {
            process.interrupt()
            process.waitUntilExit()
        }
        var logger = Logger(label: "nimbus-bench")
        logger.logLevel = .error
        try? await storage.removeAll(logger: logger)
    }

    func url(_ operation: String, webAuthToken: String) -> String {
        "\(writeBaseURL)/database/1/\(container)/development/private/\(operation)?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webAuthToken)"
    }

    func pushURL(webAuthToken: String, device: String) -> String {
        baseURL.replacingOccurrences(of: "http://", with: "ws://")
            + "/push/\(container)/development?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webAuthToken)&deviceID=\(device)"
    }

    func post(_ http: HTTPClient, _ operation: String, webAuthToken: String, device: String, _ body: JSON) async throws -> JSON {
        var request = HTTPClientRequest(url: url(operation, webAuthToken: webAuthToken))
        request.method = .POST
        request.headers.add(name: "X-Nimbus-Device-ID", value: device)
        request.body = .bytes(ByteBuffer(bytes: body.serializedBytes()))
        let response = try await http.execute(request, timeout: .seconds(60))
        let buffer = try await response.body.collect(upTo: 16 << 20)
        let json = try JSON.parse(Array(buffer.readableBytesView))
        guard response.status == .ok else { throw BenchError("\(operation) failed: \(json.serialized())") }
        return json
    }
}

// MARK: - Devices

/// Arrival times of pushes, by the `seq` their `af` carries.
final class PushArrivalLog: Sendable {
    private let arrivals = NIOLockedValueBox<[Int: [ContinuousClock.Instant]]>([:])
    private let connected = NIOLockedValueBox(0)

    private static let seqMarker = Array(#""seq":"#.utf8)

    /// Notes a push frame read at `arrival` (on the event loop that read it).
    func record(_ frame: ByteBuffer, at arrival: ContinuousClock.Instant) {
        // The seq is in `"af":{"seq":N}`; find it in the bytes (no parse, no String search:
        // with 1 000 devices this runs 20 000 times a second on the cores the server uses).
        let found = frame.withUnsafeReadableBytes { bytes -> Int? in
            let marker = Self.seqMarker
            guard bytes.count > marker.count else { return nil }
            var start = 0
            while start + marker.count < bytes.count {
                if bytes[start] == marker[0], (1..<marker.count).allSatisfy({ bytes[start + $0] == marker[$0] }) { break }
                start += 1
            }
            var seq = 0
            var index = start + marker.count
            while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 {
                seq = seq * 10 + Int(bytes[index] &- UInt8(ascii: "0"))
                index += 1
            }
            return index > start + marker.count ? seq : nil
        }
        guard let seq = found else { return }
        arrivals.withLockedValue { $0[seq, default: []].append(arrival) }
    }

    func opened() { connected.withLockedValue { $0 += 1 } }
    var openCount: Int { connected.withLockedValue { $0 } }
    func times(_ seq: Int) -> [ContinuousClock.Instant] { arrivals.withLockedValue { $0[seq] ?? [] } }
    var total: Int { arrivals.withLockedValue { $0.values.reduce(0) { $0 + $1.count } } }
}

/// Connects WebSocket devices and keeps them connected until `stop`.
final class DeviceFleet: Sendable {
    private let channels = NIOLockedValueBox<[any Channel]>([])
    let log = PushArrivalLog()

    /// Connects `urls.count` devices, at most `concurrency` connecting at once; returns when all are open.
    func connect(_ urls: [String], concurrency: Int = 100) async throws {
        let log = log
        for start in stride(from: 0, to: urls.count, by: concurrency) {
            let batch = try await withThrowingTaskGroup(of: (any Channel).self) { group in
                for url in urls[start..<min(start + concurrency, urls.count)] {
                    group.addTask {
                        try await BenchWebSocketDevice.connect(
                            url: url, group: MultiThreadedEventLoopGroup.singleton, onOpen: { log.opened() },
                            onText: { frame, arrival in log.record(frame, at: arrival) })
                    }
                }
                var opened: [any Channel] = []
                for try await channel in group { opened.append(channel) }
                return opened
            }
            channels.withLockedValue { $0 += batch }
        }
    }

    func stop() async {
        let all = channels.withLockedValue { $0 }
        for channel in all { try? await channel.close() }
    }
}

// MARK: - Latency

struct PushLatencyResult: Sendable {
    var devices: Int
    var allOneUser: Bool
    var saves: Int
    var rate: Int
    var pushes: Int
    var missing: Int
    /// Milliseconds from the modify answer on A to the push frame on a device (negative: the push came first).
    var afterAnswer: [Double]
    /// Milliseconds from sending the modify request to the push frame.
    var afterRequest: [Double]
    /// Milliseconds from sending each modify request to A having read its answer.
    var requestToAnswer: [Double]
    /// Milliseconds from a save's first push frame to its last (how long one fan-out takes).
    var fanOutSpread: [Double]
    /// `sqlite`, or `postgres, N nodes`.
    var storage: String

    func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
    }

    var mode: String { allOneUser ? "one user, every save pushes to all devices" : "one device per user, every save pushes to one" }

    /// The share of pushes that reached the device before A had read its answer.
    var pushedFirst: Double { afterAnswer.isEmpty ? 0 : Double(afterAnswer.filter { $0 < 0 }.count) / Double(afterAnswer.count) }

    var line: String {
        let answer = afterAnswer.map { max(0, $0) }
        return String(
            format: "push latency [%@], %5d devices (%@), %d saves/s: answer→push p50 %.2f ms  p99 %.2f ms  max %.2f ms (%.0f%% before the answer) | request→push p50 %.2f ms  p99 %.2f ms | request→answer p50 %.2f ms, fan-out first→last push p50 %.2f ms | %d pushes, %d missing",
            storage, devices, mode, rate, percentile(answer, 0.5), percentile(answer, 0.99), answer.max() ?? .nan,
            pushedFirst * 100, percentile(afterRequest, 0.5), percentile(afterRequest, 0.99),
            percentile(requestToAnswer, 0.5), percentile(fanOutSpread, 0.5), pushes, missing)
    }

    var json: JSON {
        let answer = afterAnswer.map { max(0, $0) }
        return [
            "storage": .string(storage), "devices": .int(devices), "fanout": .string(allOneUser ? "user" : "users"), "savesPerSecond": .int(rate),
            "saves": .int(saves), "pushes": .int(pushes), "missing": .int(missing),
            "answerToPushP50Ms": .double(percentile(answer, 0.5)), "answerToPushP99Ms": .double(percentile(answer, 0.99)),
            "answerToPushMaxMs": .double(answer.max() ?? 0), "pushedBeforeAnswer": .double(pushedFirst),
            "requestToPushP50Ms": .double(percentile(afterRequest, 0.5)),
            "requestToPushP99Ms": .double(percentile(afterRequest, 0.99)),
            "requestToAnswerP50Ms": .double(percentile(requestToAnswer, 0.5)),
            "fanOutSpreadP50Ms": .double(percentile(fanOutSpread, 0.5)),
        ]
    }
}

/// Device A saves at a steady rate; the connected devices' push frames are timed against
/// A's modify answers. Each save creates one record with `seq`; a query subscription with
/// `desiredKeys: ["seq"]` puts it in the push (`af`), so every frame is matched to its save.
struct PushLatencyRun {
    var devices: Int
    var allOneUser: Bool
    var rate: Int
    var seconds: Int
    var setup: ServerProcess.Setup

    func run() async throws -> PushLatencyResult {
        try await ServerProcess.with(setup) { try await run(on: $0) }
    }

    private func run(on server: ServerProcess) async throws -> PushLatencyResult {
        let http = HTTPClient.shared
        let fleet = DeviceFleet()

        // Users: one for all devices, or one per device. Each user subscribes.
        let userCount = allOneUser ? 1 : devices
        var users: [(token: String, recordName: String)] = []
        for index in 0..<userCount { users.append(try await server.user("u\(index)")) }
        let subscription: JSON = [
            "operations": [[
                "operationType": "create",
                "subscription": [
                    "subscriptionID": "bench", "subscriptionType": "query", "zoneID": ["zoneName": "Bench"],
                    "query": ["recordType": "Ping"], "firesOn": ["create"],
                    "notificationInfo": ["shouldSendContentAvailable": true, "desiredKeys": ["seq"]],
                ],
            ]]
        ]
        for user in users {
            _ = try await server.post(
                http, "zones/modify", webAuthToken: user.token, device: "A",
                ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Bench"]]]]])
            _ = try await server.post(http, "subscriptions/modify", webAuthToken: user.token, device: "A", subscription)
        }
        let urls = (0..<devices).map { index in
            server.pushURL(webAuthToken: users[allOneUser ? 0 : index].token, device: "B\(index)")
        }
        try await fleet.connect(urls)

        // Warm up: a few saves whose pushes are not counted.
        for seq in 0..<20 {
            _ = try await save(server, http, user: users[seq % users.count], seq: -1 - seq)
        }

        let saves = rate * seconds
        let interval = Duration.seconds(1) / rate
        let start = ContinuousClock.now + .milliseconds(100)
        let timings = try await withThrowingTaskGroup(of: (Int, ContinuousClock.Instant, ContinuousClock.Instant).self) { group in
            for seq in 0..<saves {
                let due = start + interval * seq
                try await Task.sleep(until: due)
                let user = users[seq % users.count]
                group.addTask {
                    let sent = ContinuousClock.now
                    try await save(server, http, user: user, seq: seq)
                    return (seq, sent, ContinuousClock.now)
                }
            }
            var timings: [Int: (sent: ContinuousClock.Instant, answered: ContinuousClock.Instant)] = [:]
            for try await (seq, sent, answered) in group { timings[seq] = (sent, answered) }
            return timings
        }
        let expected = saves * (allOneUser ? devices : 1)
        let deadline = ContinuousClock.now + .seconds(30)
        while fleet.log.total < expected + 20 * (allOneUser ? devices : 1), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        await fleet.stop()

        var afterAnswer: [Double] = []
        var afterRequest: [Double] = []
        var pushes = 0
        var answers: [Double] = []
        var spreads: [Double] = []
        for seq in 0..<saves {
            guard let timing = timings[seq] else { continue }
            let arrivals = fleet.log.times(seq)
            for arrival in arrivals {
                pushes += 1
                afterAnswer.append((arrival - timing.answered).milliseconds)
                afterRequest.append((arrival - timing.sent).milliseconds)
            }
            answers.append((timing.answered - timing.sent).milliseconds)
            if let first = arrivals.min(), let last = arrivals.max() { spreads.append((last - first).milliseconds) }
        }
        return PushLatencyResult(
            devices: devices, allOneUser: allOneUser, saves: saves, rate: rate, pushes: pushes,
            missing: expected - pushes, afterAnswer: afterAnswer, afterRequest: afterRequest, requestToAnswer: answers,
            fanOutSpread: spreads, storage: setup.label)
    }

    func save(_ server: ServerProcess, _ http: HTTPClient, user: (token: String, recordName: String), seq: Int) async throws {
        let body: JSON = [
            "zoneID": ["zoneName": "Bench"],
            "operations": [[
                "operationType": "create",
                "record": ["recordType": "Ping", "fields": ["seq": ["value": .int(seq), "type": "INT64"]]],
            ]],
        ]
        _ = try await server.post(http, "records/modify", webAuthToken: user.token, device: "A", body)
    }
}

// MARK: - Idle memory

struct IdleMemoryResult: Sendable {
    var connections: Int
    var baselineBytes: Int
    var connectedBytes: Int
    var connectSeconds: Double

    var perConnection: Double { Double(connectedBytes - baselineBytes) / Double(connections) }

    var line: String {
        String(
            format: "idle WebSockets: %6d connected in %.1f s; server RSS %.1f MiB → %.1f MiB: %.2f KiB per connection",
            connections, connectSeconds, Double(baselineBytes) / 1_048_576, Double(connectedBytes) / 1_048_576,
            perConnection / 1024)
    }

    var json: JSON {
        [
            "connections": .int(connections), "baselineRSSBytes": .int(baselineBytes),
            "connectedRSSBytes": .int(connectedBytes), "bytesPerConnection": .double(perConnection),
            "connectSeconds": .double(connectSeconds),
        ]
    }
}

/// Connects `connections` authenticated WebSockets (100 users, distinct devices) that then
/// stay idle, and compares the server's resident memory before and after.
struct IdleMemoryRun {
    var connections: Int

    func run() async throws -> IdleMemoryResult {
        try await ServerProcess.with(ServerProcess.Setup()) { try await run(on: $0) }
    }

    private func run(on server: ServerProcess) async throws -> IdleMemoryResult {
        var users: [String] = []
        for index in 0..<min(100, connections) { users.append(try await server.user("idle\(index)").token) }
        // Warm the server: a connection opened and closed, so the baseline holds the code paths.
        let warm = DeviceFleet()
        try await warm.connect([server.pushURL(webAuthToken: users[0], device: "warm")])
        await warm.stop()
        try await Task.sleep(for: .seconds(1))
        let baseline = server.residentBytes

        let fleet = DeviceFleet()
        let urls = (0..<connections).map { server.pushURL(webAuthToken: users[$0 % users.count], device: "idle-\($0)") }
        let started = ContinuousClock.now
        try await fleet.connect(urls, concurrency: 200)
        let connectSeconds = (ContinuousClock.now - started).milliseconds / 1000
        try await Task.sleep(for: .seconds(2))
        let connected = server.residentBytes
        await fleet.stop()
        return IdleMemoryResult(
            connections: connections, baselineBytes: baseline, connectedBytes: connected, connectSeconds: connectSeconds)
    }
}
