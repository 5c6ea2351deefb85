#if os(Linux)
import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore

/// `nimbus-bench push`: push latency and the memory of idle push connections, against a
/// `nimbus serve` child process (so its memory is the server's alone). See `bench/README.md`.
struct PushBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Measure push latency (modify answer on A → push frame on B) and memory per idle WebSocket.",
        discussion: """
            Starts `nimbus serve` (the `nimbus` executable beside this one) on a fresh temporary data directory for each \
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
        help: "Who the devices are: 'user' (every device is the saving user's: each save pushes to all), 'users' (one device per user: each save pushes to one) or 'shared' (the saving user's zone is shared with up to 100 participants, the devices theirs, each subscribed in its shared database: each save pushes to all).")
    var fanout = "user,users"
    @Option(name: .long, help: "Comma-separated numbers of idle authenticated WebSockets for the memory runs.")
    var idle = "1000,10000"
    // `--only` and `--json` belong to `nimbus-bench`; these are the push bench's own.
    @Option(name: .long, help: "Comma-separated runs: latency,idle.")
    var runs = "latency,idle"
    @Flag(name: .long, help: "Print the results as JSON.")
    var printJSON = false
    // `--postgres` belongs to `nimbus-bench` (a parent's option wins the parse).
    @Option(
        name: .customLong("postgres-url"),
        help: "Run the latency runs on PostgreSQL (a postgres:// URL; a fresh schema, dropped afterwards).")
    var postgres: String?
    @Option(
        name: .long,
        help: "With --postgres: server nodes. With 2, devices connect to node 1 and saves go through node 2, so every push crosses nodes.")
    var nodes = 1
    @Option(
        name: .long,
        help: "Threads reading the devices' sockets in the latency runs (each an epoll loop; devices dealt in turn).")
    var deviceThreads = 1

    static func list(_ text: String) -> [Int] { text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func validate() throws {
        guard rate >= 1, duration >= 1, deviceThreads >= 1 else {
            throw ValidationError("--rate, --duration and --device-threads must be positive")
        }
        guard nodes >= 1, nodes == 1 || postgres != nil else {
            throw ValidationError("--nodes above 1 needs --postgres-url (SQLite serves one node)")
        }
        for mode in fanout.split(separator: ",") where PushFanout(rawValue: String(mode)) == nil {
            throw ValidationError("--fanout takes user, users and/or shared")
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
                        devices: count, deviceThreads: deviceThreads, fanout: PushFanout(rawValue: mode) ?? .user, rate: rate,
                        seconds: duration,
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

/// The `nimbus` executable beside this one (`swift build` puts every product of the package
/// in one folder): the bench measures the server users run, in a process of its own.
func serverExecutable() throws -> String {
    let bench = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    let server = ((bench as NSString).deletingLastPathComponent as NSString).appendingPathComponent("nimbus")
    guard FileManager.default.isExecutableFile(atPath: server) else {
        throw BenchError("the push bench runs `nimbus serve` from \(server), which is not built: run `swift build -c release` first")
    }
    return server
}

/// `nimbus serve` as child processes — one on a fresh SQLite data directory, or several
/// nodes on a fresh PostgreSQL schema — with a container and users provisioned through the
/// storage. Devices connect to the first node; saves go through the last, so with two nodes
/// every push crosses nodes (PostgreSQL LISTEN/NOTIFY).
final class ServerProcess: Sendable {
    let processes: [ChildProcess]
    let storage: StorageLocation
    /// Where devices connect (the first node).
    let baseURL: String
    /// Where saves go (the last node).
    let writeBaseURL: String
    let container = "iCloud.com.example.bench"
    let apiToken: String
    let store: any NimbusStorage

    private init(
        processes: [ChildProcess], storage: StorageLocation, baseURLs: [String], apiToken: String, store: any NimbusStorage
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
        var processes: [ChildProcess] = []
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
            for process in processes { process.send(SIGINT); process.waitUntilExit() }
            throw error
        }
    }

    /// Starts one `nimbus serve` and waits for the URL it prints.
    private static func launch(_ storageArguments: [String]) async throws -> (ChildProcess, String) {
        let executable = try serverExecutable()
        var path = executable
        var arguments = ["serve", "--port", "0", "--log-level", "error"] + storageArguments
        if let output = ProcessInfo.processInfo.environment["BENCH_HEAPTRACK"] {
            arguments = ["-o", output, executable] + arguments
            path = "/usr/bin/heaptrack"
        }
        var environment = ProcessInfo.processInfo.environment
        if let arenas = environment["BENCH_MALLOC_ARENA_MAX"] { environment["MALLOC_ARENA_MAX"] = arenas }
        let process = try ChildProcess(executable: path, arguments: arguments, environment: environment, output: .pipe)
        guard let output = process.standardOutput else { throw BenchError("no pipe from nimbus serve") }
        // "Nimbus is listening on http://127.0.0.1:PORT (…)"
        let baseURL: String = try await withCheckedThrowingContinuation { continuation in
            Thread {
                var text = ""
                while true {
                    let data = output.availableData
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
            process.send(SIGINT)
            process.waitUntilExit()
        }
        var logger = Logger(label: "nimbus-bench")
        logger.logLevel = .error
        try? await storage.removeAll(logger: logger)
    }

    func url(_ operation: String, webAuthToken: String, scope: String = "private") -> String {
        "\(writeBaseURL)/database/1/\(container)/development/\(scope)/\(operation)?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webAuthToken)"
    }

    func pushURL(webAuthToken: String, device: String) -> String {
        baseURL.replacingOccurrences(of: "http://", with: "ws://")
            + "/push/\(container)/development?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webAuthToken)&deviceID=\(device)"
    }

    func post(
        _ http: HTTPClient, _ operation: String, webAuthToken: String, device: String, scope: String = "private", _ body: JSON
    ) async throws -> JSON {
        var request = HTTPClientRequest(url: url(operation, webAuthToken: webAuthToken, scope: scope))
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

// MARK: - Latency

/// Who a push latency run's devices belong to.
enum PushFanout: String, Sendable {
    /// Every device is the saving user's.
    case user
    /// One device per user, each user saving in turn.
    case users
    /// The saver's zone is shared (zone-wide) with participants who own the devices.
    case shared
}

struct PushLatencyResult: Sendable {
    var devices: Int
    var fanout: PushFanout
    var saves: Int
    var rate: Int
    var pushes: Int
    var missing: Int
    /// Milliseconds from the modify answer's arrival on A to the push frame's arrival on a
    /// device, both as the kernel stamped them (negative: the push came first).
    var afterAnswer: [Double]
    /// The same, from when the bench's threads read the answer and the frame.
    var afterAnswerRead: [Double]
    /// Milliseconds from sending the modify request to the push frame's arrival.
    var afterRequest: [Double]
    /// Milliseconds from sending each modify request to its answer's arrival on A.
    var requestToAnswer: [Double]
    /// Milliseconds from each answer's arrival on A to its save's first push frame (negative: before).
    var firstPush: [Double]
    /// Milliseconds from a save's first push frame to its last (how long one fan-out takes).
    var fanOutSpread: [Double]
    /// `sqlite`, or `postgres, N nodes`.
    var storage: String

    func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
    }

    var mode: String {
        switch fanout {
        case .user: "one user, every save pushes to all devices"
        case .users: "one device per user, every save pushes to one"
        case .shared: "a zone shared with the devices' users, every save pushes to all devices"
        }
    }

    /// The share of pushes that reached the device before A had read its answer.
    var pushedFirst: Double { afterAnswer.isEmpty ? 0 : Double(afterAnswer.filter { $0 < 0 }.count) / Double(afterAnswer.count) }

    var line: String {
        let answer = afterAnswer.map { max(0, $0) }
        let read = afterAnswerRead.map { max(0, $0) }
        return String(
            format: "push latency [%@], %5d devices (%@), %d saves/s: answer→push p50 %.2f ms  p99 %.2f ms  max %.2f ms (%.0f%% before the answer; as read by the bench's threads p50 %.2f  p99 %.2f ms) | request→push p50 %.2f ms  p99 %.2f ms | request→answer p50 %.2f ms, fan-out: first push %+.2f ms from the answer, first→last p50 %.2f ms | %d pushes, %d missing",
            storage, devices, mode, rate, percentile(answer, 0.5), percentile(answer, 0.99), answer.max() ?? .nan,
            pushedFirst * 100, percentile(read, 0.5), percentile(read, 0.99), percentile(afterRequest, 0.5),
            percentile(afterRequest, 0.99), percentile(requestToAnswer, 0.5), percentile(firstPush, 0.5),
            percentile(fanOutSpread, 0.5), pushes, missing)
    }

    var json: JSON {
        let answer = afterAnswer.map { max(0, $0) }
        return [
            "storage": .string(storage), "devices": .int(devices), "fanout": .string(fanout.rawValue), "savesPerSecond": .int(rate),
            "saves": .int(saves), "pushes": .int(pushes), "missing": .int(missing),
            "answerToPushP50Ms": .double(percentile(answer, 0.5)), "answerToPushP99Ms": .double(percentile(answer, 0.99)),
            "answerToPushMaxMs": .double(answer.max() ?? 0), "pushedBeforeAnswer": .double(pushedFirst),
            "answerToPushAsReadP50Ms": .double(percentile(afterAnswerRead.map { max(0, $0) }, 0.5)),
            "answerToPushAsReadP99Ms": .double(percentile(afterAnswerRead.map { max(0, $0) }, 0.99)),
            "requestToPushP50Ms": .double(percentile(afterRequest, 0.5)),
            "requestToPushP99Ms": .double(percentile(afterRequest, 0.99)),
            "requestToAnswerP50Ms": .double(percentile(requestToAnswer, 0.5)),
            "firstPushAfterAnswerP50Ms": .double(percentile(firstPush, 0.5)),
            "fanOutSpreadP50Ms": .double(percentile(fanOutSpread, 0.5)),
        ]
    }
}

/// Device A saves at a steady rate; the connected devices' push frames are timed against
/// A's modify answers. Each save creates one record with `seq`; a query subscription with
/// `desiredKeys: ["seq"]` puts it in the push (`af`), so every frame is matched to its save.
struct PushLatencyRun {
    var devices: Int
    var deviceThreads: Int
    var fanout: PushFanout
    var allOneUser: Bool { fanout == .user }
    var rate: Int
    var seconds: Int
    var setup: ServerProcess.Setup

    func run() async throws -> PushLatencyResult {
        try await ServerProcess.with(setup) { try await run(on: $0) }
    }

    private func run(on server: ServerProcess) async throws -> PushLatencyResult {
        let http = HTTPClient.shared
        let warmUps = 20
        let fleet = try DeviceFleet(threads: deviceThreads, numberingFrom: fanout == .shared ? -warmUps : nil)
        let setUp = try await fanout == .shared ? sharedSetup(server, http) : ownSetup(server, http)
        let urls = (0..<devices).map { index in
            server.pushURL(webAuthToken: setUp.devices[index % setUp.devices.count].token, device: "B\(index)")
        }
        try await fleet.connect(urls)
        let users = setUp.savers

        // Device A saves on its own thread, one HTTP/1.1 connection, a steady rate after a
        // few warm-up saves whose pushes are not counted.
        let saves = rate * seconds
        let targets = try users.map { try BenchEndpoint(server.url("records/modify", webAuthToken: $0.token)).target }
        let writeBase = server.writeBaseURL
        let interval = 1_000_000_000 / Int64(rate)
        let timings = try await Self.onThread { () throws -> [Int: (sent: Int64, answered: Arrival)] in
            let connection = try BenchHTTPConnection(writeBase)
            for seq in 0..<warmUps {
                _ = try Self.save(connection, target: targets[seq % targets.count], seq: -1 - seq)
            }
            var timings: [Int: (sent: Int64, answered: Arrival)] = [:]
            let start = BenchSocket.now + 100_000_000
            for seq in 0..<saves {
                let wait = start + interval * Int64(seq) - BenchSocket.now
                if wait > 0 { usleep(UInt32(wait / 1000)) }
                let answer = try Self.save(connection, target: targets[seq % targets.count], seq: seq)
                timings[seq] = (answer.sent, answer.arrival)
            }
            return timings
        }
        let perSave = fanout == .users ? 1 : devices
        let expected = saves * perSave
        // Missing pushes are counted, not fatal: wait a while for the last, then report.
        try? await fleet.waitForPushes(expected + warmUps * perSave, timeout: .seconds(30))
        let arrivalsBySeq = await fleet.stop()
        if let failure = fleet.failure { throw BenchError("a device failed during the run: \(failure)") }

        var afterAnswer: [Double] = []
        var afterAnswerRead: [Double] = []
        var afterRequest: [Double] = []
        var pushes = 0
        var answers: [Double] = []
        var spreads: [Double] = []
        var firsts: [Double] = []
        for seq in 0..<saves {
            guard let timing = timings[seq] else { continue }
            let arrivals = arrivalsBySeq[seq] ?? []
            for arrival in arrivals {
                pushes += 1
                afterAnswer.append(arrival.milliseconds(after: timing.answered.kernel))
                afterAnswerRead.append(Double(arrival.read - timing.answered.read) / 1_000_000)
                afterRequest.append(arrival.milliseconds(after: timing.sent))
            }
            answers.append(timing.answered.milliseconds(after: timing.sent))
            let kernelTimes = arrivals.map(\.kernel)
            if let first = kernelTimes.min(), let last = kernelTimes.max() {
                spreads.append(Double(last - first) / 1_000_000)
                firsts.append(Double(first - timing.answered.kernel) / 1_000_000)
            }
        }
        return PushLatencyResult(
            devices: devices, fanout: fanout, saves: saves, rate: rate, pushes: pushes,
            missing: expected - pushes, afterAnswer: afterAnswer, afterAnswerRead: afterAnswerRead, afterRequest: afterRequest,
            requestToAnswer: answers, firstPush: firsts, fanOutSpread: spreads, storage: setup.label)
    }

    typealias BenchUser = (token: String, recordName: String)

    /// Users saving and subscribed in their own database: one for all devices, or one per device.
    private func ownSetup(_ server: ServerProcess, _ http: HTTPClient) async throws -> (savers: [BenchUser], devices: [BenchUser]) {
        let userCount = allOneUser ? 1 : devices
        var users: [BenchUser] = []
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
        return (users, users)
    }

    /// One owner saving in a zone shared whole with up to 100 participants (a share's limit),
    /// each subscribed in their shared database; the devices are dealt to the participants.
    private func sharedSetup(_ server: ServerProcess, _ http: HTTPClient) async throws -> (savers: [BenchUser], devices: [BenchUser]) {
        let owner = try await server.user("owner")
        var participants: [BenchUser] = []
        for index in 0..<min(devices, 100) { participants.append(try await server.user("p\(index)")) }
        _ = try await server.post(
            http, "zones/modify", webAuthToken: owner.token, device: "A",
            ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Bench"]]]]])
        let invited: [JSON] = participants.map {
            ["userIdentity": ["userRecordName": .string($0.recordName)], "permission": "READ_ONLY"]
        }
        let saved = try await server.post(
            http, "records/modify", webAuthToken: owner.token, device: "A",
            [
                "zoneID": ["zoneName": "Bench"],
                "operations": [[
                    "operationType": "create",
                    "record": [
                        "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share",
                        "publicPermission": "NONE", "participants": .array(invited),
                    ],
                ]],
            ])
        guard let guid = saved["records"]?.array?.first?["shortGUID"]?.string else {
            throw BenchError("saving the share failed: \(saved.serialized().prefix(300))")
        }
        let subscription: JSON = [
            "operations": [[
                "operationType": "create",
                "subscription": [
                    "subscriptionID": "bench", "subscriptionType": "database",
                    "notificationInfo": ["shouldSendContentAvailable": true],
                ],
            ]]
        ]
        for participant in participants {
            _ = try await server.post(
                http, "records/accept", webAuthToken: participant.token, device: "A", scope: "public",
                ["shortGUIDs": [["value": .string(guid)]]])
            _ = try await server.post(
                http, "subscriptions/modify", webAuthToken: participant.token, device: "A", scope: "shared", subscription)
        }
        return ([owner], participants)
    }

    /// Saves one `Ping` record carrying `seq`; throws unless the answer is a saved record.
    static func save(_ connection: BenchHTTPConnection, target: String, seq: Int) throws -> BenchHTTPConnection.Answer {
        let body: JSON = [
            "zoneID": ["zoneName": "Bench"],
            "operations": [[
                "operationType": "create",
                "record": ["recordType": "Ping", "fields": ["seq": ["value": .int(seq), "type": "INT64"]]],
            ]],
        ]
        let answer = try connection.post(target, headers: [("X-Nimbus-Device-ID", "A")], body: body.serializedBytes())
        let text = String(decoding: answer.body, as: UTF8.self)
        guard answer.status == 200, !text.contains("serverErrorCode") else {
            throw BenchError("records/modify failed (\(answer.status)): \(text.prefix(300))")
        }
        return answer
    }

    /// Runs blocking `work` on a thread of its own (not one of Swift concurrency's few).
    static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
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
        let warm = try DeviceFleet()
        try await warm.connect([server.pushURL(webAuthToken: users[0], device: "warm")])
        _ = await warm.stop()
        try await Task.sleep(for: .seconds(1))
        let baseline = server.residentBytes

        let fleet = try DeviceFleet()
        let urls = (0..<connections).map { server.pushURL(webAuthToken: users[$0 % users.count], device: "idle-\($0)") }
        let started = ContinuousClock.now
        try await fleet.connect(urls, concurrency: 200)
        let connectSeconds = (ContinuousClock.now - started).milliseconds / 1000
        try await Task.sleep(for: .seconds(2))
        let connected = server.residentBytes
        _ = await fleet.stop()
        return IdleMemoryResult(
            connections: connections, baselineBytes: baseline, connectedBytes: connected, connectSeconds: connectSeconds)
    }
}
#endif
