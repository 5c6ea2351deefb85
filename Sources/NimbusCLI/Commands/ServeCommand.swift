import ArgumentParser
import Foundation
import Logging
import NimbusServer
import NimbusStore

enum ServerConfigurationDefaults {
    static var dataDirectory: String { ServerConfiguration.defaultDataDirectory }
}

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the server on embedded SQLite (Ctrl-C stops it cleanly).")

    @Option(name: .long, help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(name: .long, help: "The port to listen on (0 picks a free one).")
    var port = 8080

    @OptionGroup var data: DataOptions

    @Option(name: .long, help: "Days to keep tombstones; older sync tokens get CHANGE_TOKEN_EXPIRED.")
    var tombstoneRetentionDays: Double = 30

    @Option(name: .long, help: "Log level (trace, debug, info, notice, warning, error).")
    var logLevel = "info"

    func run() async throws {
        MallocTuning.apply()
        var logger = Logger(label: "nimbus")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        var configuration = ServerConfiguration(
            host: host, port: port, tombstoneRetention: .milliseconds(Int64(tombstoneRetentionDays * 86_400_000)))
        configuration.storage = data.location
        let server = try await RunningServer.start(configuration, handleSignals: true, logger: logger)
        print("Nimbus is listening on \(server.baseURL) (\(configuration.storage))")
        fflush(nil)
        try await server.waitUntilStopped()
        print("Nimbus stopped.")
    }
}

struct CompactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact", abstract: "Remove tombstones older than the retention window now.")

    @OptionGroup var data: DataOptions

    @Option(name: .long, help: "Days to keep tombstones.")
    var tombstoneRetentionDays: Double = 30

    func run() async throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let report = try await withStore(data) {
            try await $0.compact(retentionMillis: Int64(tombstoneRetentionDays * 86_400_000), now: now)
        }
        print("removed \(report.tombstonesRemoved) tombstones and \(report.zonesRemoved) deleted zones")
    }
}
