import ArgumentParser
import Foundation
import Logging
import Nimbus
import NimbusDocuments
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore

/// `nimbus-bench documents`: a synced folder (NimbusDocuments) end to end on an embedded
/// server, against copying the same folder on the local disk, and the key-value store's
/// save → other device time beside it.
///
/// - small / large: the first sync of a folder of `--files` small files, and of one file of
///   `--large-mb` MB: device A uploads it (`start()` on a folder that holds it), then device B
///   downloads it (`start()` on an empty folder); `cp -R` of the same folder alternates with
///   them, round by round. A fresh user each round, so each first sync starts from nothing.
/// - latency: a file saved on device A (written, then `sync()`) until it is in B's folder with
///   those bytes (B syncs on the push), one save at a time.
/// - kv: a key set on device A until B's store has the value and reports the change, one at a time.
struct DocumentsBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "documents",
        abstract: "Measure a synced folder's first sync against a local copy, and save → other device for files and keys.")

    @Option(name: .long, help: "Small files in the small-files folder.")
    var files = 1_000
    @Option(name: .long, help: "Bytes of each small file.")
    var fileBytes = 2_000
    @Option(name: .long, help: "The large file's size, in MB (10^6 bytes).")
    var largeMB = 200
    @Option(name: .long, help: "Rounds of copy and first sync per folder.")
    var rounds = 3
    @Option(name: .long, help: "Saves to time in the latency and kv runs (one at a time).")
    var saves = 100
    @Option(name: .long, help: "Untimed saves before each of those runs.")
    var warmup = 5
    @Option(name: .long, help: "Comma-separated runs: small,large,latency,kv.")
    var runs = "small,large,latency,kv"
    @Option(
        name: .customLong("postgres-url"),
        help: "Run the embedded server on PostgreSQL (a postgres:// URL; a fresh schema, dropped afterwards).")
    var postgres: String?
    @Flag(name: .customLong("keep"), help: "Keep the temporary directory.")
    var keepData = false
    @Flag(name: .customLong("json-output"), help: "Print the results as JSON.")
    var json = false

    var selectedRuns: [String] { runs.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }

    func validate() throws {
        guard files >= 1, fileBytes >= 1, largeMB >= 1, rounds >= 1, saves >= 1, warmup >= 0 else {
            throw ValidationError("--files, --file-bytes, --large-mb, --rounds and --saves must be positive")
        }
        for run in selectedRuns where !["small", "large", "latency", "kv"].contains(run) {
            throw ValidationError("unknown run '\(run)' in --runs; expected small,large,latency,kv")
        }
    }

    func run() async throws {
        #if DEBUG
        FileHandle.standardError.write(Data("warning: this is a debug build; measure with `swift build -c release`\n".utf8))
        #endif
        MallocTuning.apply()
        var logger = Logger(label: "nimbus-bench")
        logger.logLevel = .error
        let runID = UUID().uuidString.prefix(8).lowercased()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-documents-\(runID)")
        var configuration = ServerConfiguration(port: 0, dataDirectory: directory.appendingPathComponent("server").path)
        if let postgres { configuration.storage = .postgres(url: postgres, schema: "nimbus_bench_docs_\(runID)") }
        configuration.assets.maxAssetBytes = max(configuration.assets.maxAssetBytes, Int64(largeMB) * 1_000_000 + 1)
        let server = try await RunningServer.start(configuration, logger: logger)
        let bench: DocumentsBench
        do {
            bench = try await DocumentsBench.start(server: server, directory: directory, runID: String(runID))
        } catch {
            try? await server.stop()
            throw error
        }
        var lines: [String] = []
        var results: [String: JSON] = [:]
        do {
            if selectedRuns.contains("small") {
                let source = try DocumentsBench.makeSmallFiles(count: files, bytes: fileBytes, in: directory)
                let row = try await bench.firstSyncs(of: source, files: files, rounds: rounds, label: "\(files) files of \(fileBytes) B")
                lines.append(row.text)
                results["small"] = row.json
            }
            if selectedRuns.contains("large") {
                let source = try DocumentsBench.makeLargeFile(bytes: largeMB * 1_000_000, in: directory)
                let row = try await bench.firstSyncs(of: source, files: 1, rounds: rounds, label: "one file of \(largeMB) MB")
                lines.append(row.text)
                results["large"] = row.json
            }
            if selectedRuns.contains("latency") {
                let summary = try await bench.fileLatency(saves: saves, warmup: warmup)
                lines.append("file saved on A → in B's folder (\(saves) saves, one at a time): \(summary.text)")
                results["latency"] = summary.json(saves: saves)
            }
            if selectedRuns.contains("kv") {
                let summary = try await bench.keyValueLatency(saves: saves, warmup: warmup)
                lines.append("key set on A → value and change on B (\(saves) sets, one at a time): \(summary.text)")
                results["kv"] = summary.json(saves: saves)
            }
        } catch {
            await bench.shutDown(storage: configuration.storage, logger: logger, keep: keepData)
            throw error
        }
        await bench.shutDown(storage: configuration.storage, logger: logger, keep: keepData)
        let machine = MachineInfo.current()
        if json {
            results["machine"] = machine.json
            results["engine"] = .string(postgres == nil ? "sqlite" : "postgres")
            print(JSON.object(results).serialized())
        } else {
            print("Documents benchmark on \(machine.summary), load \(machine.loadAverage), \(postgres == nil ? "SQLite" : "PostgreSQL")")
            for line in lines { print("  \(line)") }
        }
    }
}

extension LatencySummary {
    var text: String {
        func f(_ value: Double) -> String { String(format: "%.1f", value) }
        return "p50 \(f(p50)) ms, p90 \(f(p90)) ms, p99 \(f(p99)) ms, max \(f(max)) ms, mean \(f(mean)) ms"
    }

    func json(saves: Int) -> JSON {
        .object([
            "saves": .int(saves), "p50_ms": .double(p50), "p90_ms": .double(p90), "p99_ms": .double(p99),
            "max_ms": .double(max), "mean_ms": .double(mean),
        ])
    }
}
