import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NimbusProtocol
import NimbusServer

/// `nimbus-bench fairness-flood` (hidden): the flooding user of `nimbus-bench fairness`, in a
/// process of its own, as a flooding device on another machine would be: its client's work is
/// not the server's, nor the quiet user's.
///
/// Floods `records/modify` on `--flood-connections` connections until standard input closes. Each
/// line read from standard input is answered on standard output with the tally so far, as
/// JSON (`{"answered":…,"ok":…,"throttled":…,"other":…,"records":…}`).
struct FairnessFloodCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fairness-flood", abstract: "The flooding user of `nimbus-bench fairness`.", shouldDisplay: false)

    // Not `--url`, `--container`…: the parent command's options of those names would take them.
    @Option var floodURL: String
    @Option var floodContainer: String
    @Option var floodAPIToken: String
    @Option var floodWebAuthToken: String
    @Option var floodConnections: Int
    @Option var floodBatch: Int
    @Option var floodRate: Double = 0
    @Option var floodZone = "flood"

    func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: floodConnections)
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let flooder = BenchClient(
            http: http, baseURL: floodURL,
            credentials: BenchCredentials(
                container: floodContainer, apiToken: floodAPIToken, webAuthToken: floodWebAuthToken))
        let stop = NIOLockedValueBox(false)
        let tally = NIOLockedValueBox(FloodTally())
        let flood = Task {
            await FairnessFlood.run(
                flooder, zone: floodZone, connections: floodConnections, batch: floodBatch, rate: floodRate, stop: stop,
                tally: tally)
        }
        // Standard input: a line asks for the tally, the end stops the flood.
        let reader = Thread {
            while readLine() != nil {
                let now = tally.withLockedValue { $0 }
                print(now.json.serialized())
                fflush(nil)
            }
            stop.withLockedValue { $0 = true }
        }
        reader.start()
        await flood.value
        try await http.shutdown()
    }
}

enum FairnessFlood {
    /// `records/modify` requests of `batch` records into `zone` on `connections` connections, as
    /// fast as the server answers (or about `rate` requests/s in all, when positive), until
    /// `stop`; errors are counted, not thrown.
    static func run(
        _ flooder: BenchClient, zone: String, connections: Int, batch: Int, rate: Double, stop: NIOLockedValueBox<Bool>,
        tally: NIOLockedValueBox<FloodTally>
    ) async {
        await withTaskGroup(of: Void.self) { group in
            for connection in 0..<connections {
                group.addTask {
                    var index = 0
                    while !stop.withLockedValue({ $0 }) {
                        let range = index..<(index + batch)
                        index += batch
                        let body = BenchClient.createBody(zone: zone, prefix: "f\(connection)-", range: range)
                        let status = (try? await flooder.post("records/modify", body).status) ?? 0
                        tally.withLockedValue { $0.count(status: status, records: batch) }
                        if rate > 0 { try? await Task.sleep(for: .seconds(Double(connections) / rate)) }
                    }
                }
            }
        }
    }
}

/// The flooder as a child process (`nimbus-bench fairness-flood`), asked for its tally through
/// a pipe.
final class FloodProcess: Sendable {
    private let process: ChildProcess
    private let input: FileHandle
    private let output: FileHandle

    init(baseURL: String, credentials: BenchCredentials, zone: String, connections: Int, batch: Int, rate: Double) throws {
        let flood = [
            "fairness-flood", "--flood-url", baseURL, "--flood-container", credentials.container,
            "--flood-api-token", credentials.apiToken, "--flood-web-auth-token", credentials.webAuthToken,
            "--flood-connections", String(connections), "--flood-batch", String(batch), "--flood-rate", String(rate), "--flood-zone", zone,
        ]
        #if os(Linux)
        // At the lowest CPU priority, every thread of it: the flooder stands in for a device on
        // another machine, so its client's work should not take the server's cores. `chrt`
        // starts it under `SCHED_IDLE`, which its threads inherit. (Before session 17 a
        // `setpriority` on the child's ID reached only its main thread: Dispatch sets its
        // workers' nice value from their QoS, so they ran at the usual priority.)
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "/proc/self/exe"
        let process = try ChildProcess(
            executable: "/usr/bin/chrt", arguments: ["--idle", "0", executable] + flood, input: .pipe, output: .pipe)
        #else
        let process = try ChildProcess(executable: CommandLine.arguments[0], arguments: flood, input: .pipe, output: .pipe)
        #endif
        guard let input = process.standardInput, let output = process.standardOutput else {
            throw BenchError("no pipes to the flooding process")
        }
        self.process = process
        self.input = input
        self.output = output
    }

    /// The child's tally now (blocks until it answers).
    func tally() throws -> FloodTally {
        input.write(Data("t\n".utf8))
        var line: [UInt8] = []
        while true {
            let byte = try output.read(upToCount: 1) ?? Data()
            guard let first = byte.first else { throw BenchError("the flooding process ended early") }
            if first == UInt8(ascii: "\n") { break }
            line.append(first)
        }
        return try FloodTally(json: JSON.parse(line))
    }

    /// Stops the flood and waits for the child to exit.
    func stop() {
        try? input.close()
        process.waitUntilExit()
    }
}

extension FloodTally {
    var json: JSON {
        .object([
            "answered": .int(answered), "ok": .int(ok), "throttled": .int(throttled), "other": .int(other),
            "records": .int(records),
        ])
    }

    init(json: JSON) throws {
        func int(_ key: String) throws -> Int {
            guard let value = json[key]?.int64 else { throw BenchError("the flooder's tally lacks \(key)") }
            return Int(value)
        }
        self.init(
            answered: try int("answered"), ok: try int("ok"), throttled: try int("throttled"), other: try int("other"),
            records: try int("records"))
    }
}
