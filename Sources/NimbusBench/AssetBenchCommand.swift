import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore

/// `nimbus-bench assets`: asset upload and download throughput against the disk's copy
/// rate, a resumed upload, and memory under concurrent uploads (``AssetBench``), on an
/// embedded server over loopback, SQLite or PostgreSQL.
struct AssetBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assets",
        abstract: "Measure asset uploads and downloads against a file copy, a resumed upload, and memory under concurrent uploads.")

    @Option(name: .long, help: "Comma-separated file sizes of the throughput run, in MB (10^6 bytes).")
    var sizes = "1,50"
    @Option(name: .long, help: "Rounds of copy, upload and download per size.")
    var repetitions = 5
    @Option(name: .long, help: "Size of the resumed upload, in MB.")
    var resumeSize = 50.0
    @Option(name: .long, help: "Clients uploading at once in the concurrent run.")
    var clients = 20
    @Option(name: .long, help: "Size each concurrent client uploads, in MB.")
    var concurrentSize = 50.0
    @Option(name: .long, help: "Comma-separated runs: throughput,resume,concurrent.")
    var runs = "throughput,resume,concurrent"
    // `--postgres`, `--data`, `--keep-data` and `--json` belong to `nimbus-bench` (a parent's
    // option wins the parse).
    @Option(
        name: .customLong("postgres-url"),
        help: "Run on PostgreSQL (a postgres:// URL): a fresh schema, dropped afterwards unless --keep-data; asset bytes in PostgreSQL.")
    var postgres: String?
    @Option(name: .customLong("directory"), help: "Directory for the server's data and the bench's files (must not exist yet; default: a temporary one).")
    var data: String?
    @Flag(name: .customLong("keep"), help: "Keep the data directory (and PostgreSQL schema).")
    var keepData = false
    @Flag(name: .customLong("json-output"), help: "Print the results as JSON.")
    var json = false
    @Option(
        name: .customLong("assets"),
        help: ArgumentHelp(
            "Where the server keeps asset bytes, as `nimbus serve --assets` (file:///dir, s3://…): default the engine's own place.",
            valueName: "location"))
    var assets: String?
    @Option(name: .customLong("nginx"), help: "The nginx executable of the yardstick (default: /usr/sbin/nginx, Debian's nginx-core).")
    var nginx: String?
    @Flag(name: .customLong("no-nginx"), help: "Run the throughput without nginx (no yardstick, so no target).")
    var noNginx = false

    var selectedRuns: Set<String> { Set(runs.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }

    var sizeBytes: [Int] {
        sizes.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.map { Int($0 * 1e6) }
    }

    func validate() throws {
        guard !sizeBytes.isEmpty, sizeBytes.allSatisfy({ $0 >= 2 }),
            sizeBytes.count == sizes.split(separator: ",").count
        else { throw ValidationError("--sizes must be comma-separated positive sizes in MB") }
        guard repetitions >= 1, clients >= 1, resumeSize * 1e6 >= 2, concurrentSize * 1e6 >= 1 else {
            throw ValidationError("--repetitions, --clients, --resume-size and --concurrent-size must be positive")
        }
        for run in selectedRuns where !["throughput", "resume", "concurrent"].contains(run) {
            throw ValidationError("unknown run '\(run)' in --runs; expected throughput,resume,concurrent")
        }
    }

    func run() async throws {
        #if DEBUG
        FileHandle.standardError.write(Data("warning: this is a debug build; measure with `swift build -c release`\n".utf8))
        #endif
        MallocTuning.apply()  // as `nimbus serve` does, for the embedded server
        let runID = String(UUID().uuidString.prefix(8)).lowercased()
        let root = data ?? FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-assets-\(runID)").path
        guard !FileManager.default.fileExists(atPath: root) else {
            throw ValidationError("\(root) exists; the bench runs on a fresh directory")
        }
        let files = (root as NSString).appendingPathComponent("files")
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        defer { if !keepData { try? FileManager.default.removeItem(atPath: root) } }

        var configuration = ServerConfiguration(port: 0)
        if let assets {
            do {
                configuration.assets.location = try AssetLocation(parsing: assets)
            } catch {
                throw ValidationError("--assets: \(error.message)")
            }
        }
        if let postgres {
            configuration.storage = .postgres(url: postgres, schema: "nimbus_bench_\(runID)")
        } else {
            configuration.storage = .sqlite(directory: (root as NSString).appendingPathComponent("server"))
        }
        var settings = AssetBench.Settings(
            sizes: sizeBytes, repetitions: repetitions, resumeSize: Int(resumeSize * 1e6), clients: clients,
            concurrentSize: Int(concurrentSize * 1e6), runs: selectedRuns, directory: files)
        let inDatabase = postgres != nil && configuration.assets.location == .engineDefault
        if !noNginx, selectedRuns.contains("throughput") {
            settings.nginx = try await NginxPeer.start(
                executable: try NginxPeer.executable(nginx), directory: (root as NSString).appendingPathComponent("nginx"))
            settings.targets = inDatabase ? .inDatabase : .files
        }
        defer { settings.nginx?.stop() }
        let largest = ([settings.resumeSize, settings.concurrentSize] + settings.sizes).max() ?? 0
        configuration.assets.maxAssetBytes = max(configuration.assets.maxAssetBytes, Int64(largest))

        var logger = Logger(label: "nimbus")
        logger.logLevel = .warning
        let report = try await Self.withServer(configuration, clients: clients, runID: runID, keepData: keepData, logger: logger) {
            client in
            try await AssetBench(client: client, settings: settings).run()
        }

        let machine = MachineInfo.current()
        let engine = postgres == nil ? "sqlite" : "postgres"
        if json {
            var members: [String: JSON] = [
                "machine": machine.json, "engine": .string(engine),
                "throughput": .array(report.throughput.map(\.json)), "resume": .array(report.resumes.map(\.json)),
            ]
            if let concurrent = report.concurrent { members["concurrent"] = concurrent.json }
            print(JSON.object(members).serialized())
        } else {
            var lines = [
                "Nimbus bench assets — \(machine.summary)",
                "server: embedded, \(engine) (\(configuration.storage)), asset bytes: \(configuration.assets.location); "
                    + "files on the same disk, \(files)"
                    + (settings.nginx.map { "; yardstick: nginx on \($0.baseURL), one worker, sendfile" } ?? ""),
                "load average at the end: \(machine.loadAverage)", "",
            ]
            for result in report.throughput { lines += result.lines }
            if !report.throughput.isEmpty { lines.append("") }
            for result in report.resumes { lines.append(result.line) }
            if !report.resumes.isEmpty { lines.append("") }
            if let concurrent = report.concurrent { lines += [concurrent.line, ""] }
            lines.append(
                "MB = 10^6 bytes. copy: a read/write loop of 1 MiB buffers, no fsync. upload: assets/upload, the streamed "
                    + "POST, records/modify; download: records/lookup, the streamed GET into a file. nginx: a WebDAV PUT of "
                    + "the same file from the same client, a GET of it into a file; Nimbus and nginx alternate going first. "
                    + "cpu: this process (client and embedded server; not nginx) per operation, median.")
            print(lines.joined(separator: "\n"))
        }
        fflush(nil)
        let met = report.throughput.allSatisfy { !$0.hasTarget || $0.targetMet } && report.resumes.allSatisfy(\.targetMet)
            && (report.concurrent?.bounded ?? true)
        if !met { throw ExitCode(2) }
    }

    /// Starts an embedded server on `configuration`, provisions a container and user, and runs
    /// `body` with a client of it; stops the server and drops its storage (unless `keepData`).
    static func withServer<T: Sendable>(
        _ configuration: ServerConfiguration, clients: Int, runID: String, keepData: Bool, logger: Logger,
        _ body: (AssetBenchClient) async throws -> T
    ) async throws -> T {
        let server = try await RunningServer.start(configuration, logger: logger)
        var httpConfiguration = HTTPClient.Configuration()
        httpConfiguration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(8, clients))
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        func shutDown() async {
            try? await http.shutdown()
            try? await server.stop()
            if !keepData { try? await configuration.storage.removeAll(logger: logger) }
        }
        do {
            let credentials = try await BenchCommand.provision(server.store, runID: runID)
            let api = BenchClient(http: http, baseURL: server.baseURL, credentials: credentials)
            let result = try await body(AssetBenchClient(api: api))
            await shutDown()
            return result
        } catch {
            await shutDown()
            throw error
        }
    }
}
