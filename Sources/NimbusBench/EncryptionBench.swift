import ArgumentParser
import Foundation
import Logging
import Nimbus
import NimbusEngines
import NimbusServer
import NimbusStore

/// `nimbus-bench encryption`: what end-to-end encryption costs a client, as the SDK pays it
/// (sealing before the send, opening the saved record that comes back), against the same
/// runs with the same fields unencrypted, in alternating rounds on one embedded server.
struct EncryptionBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encryption",
        abstract:
            "The cost of end-to-end encryption: single-record saves, batched writes and a large asset's upload and download, encrypted vs plain (build with -c release).",
        discussion: """
            Each round runs both modes, plain and encrypted, in alternating order (plain first in \
            even rounds); the figure of each mode is its median over the rounds, and the ratio is \
            encrypted over plain. Records carry a title (plain in both modes) and a 200-byte body, \
            a mood and three tags (encrypted in the encrypted mode). The asset runs save a record \
            with a file of --asset-mb MB (a new incompressible file each round) and download it: \
            encrypted by a container with keys, plain by the same user's container without.
            """)

    @Option(name: .long, help: "Rounds (each runs both modes).")
    var rounds = 6
    @Option(name: .long, help: "Sequential single-record saves (updates of one record) per mode and round.")
    var saves = 200
    @Option(name: .long, help: "Batched records/modify requests per mode and round.")
    var batches = 10
    @Option(name: .long, help: "Records per batched request (at most 200).")
    var batch = 200
    @Option(name: .long, help: "The asset's size in MB (10^6 bytes); 0 skips the asset runs.")
    var assetMB = 50
    // `--postgres` belongs to `nimbus-bench` (a parent's option wins the parse: with it, this
    // mode ran on SQLite and said so).
    @Option(
        name: .customLong("postgres-url"),
        help: "Run the embedded server on PostgreSQL (a postgres:// URL; a fresh schema, dropped afterwards).")
    var postgres: String?

    enum Mode: String, CaseIterable, Sendable { case plain, encrypted }

    func run() async throws {
        var logger = Logger(label: "nimbus-bench")
        logger.logLevel = .error
        let runID = UUID().uuidString.prefix(8).lowercased()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-e2e-\(runID)")
        var configuration = ServerConfiguration(port: 0, dataDirectory: directory.appendingPathComponent("server").path)
        if let postgres { configuration.storage = .postgres(url: postgres, schema: "nimbus_bench_e2e_\(runID)") }
        // Room for the ciphertext: 48 bytes a 256 KiB chunk and 21 over the file.
        configuration.assets.maxAssetBytes = max(configuration.assets.maxAssetBytes, Int64(assetMB) * 1_100_000)
        let server = try await RunningServer.start(configuration, logger: logger)
        func shutDown() async {
            try? await server.stop()
            try? await configuration.storage.removeAll(logger: logger)
            try? FileManager.default.removeItem(at: directory)
        }
        do {
            let credentials = try await BenchCommand.provision(server.store, runID: String(runID))
            var container = Container(
                identifier: credentials.container, baseURL: URL(string: server.baseURL)!,
                credentials: .apiToken(credentials.apiToken, webAuthToken: credentials.webAuthToken))
            container.encryption = EncryptionKeys(store: FileKeyStore(directory: directory.appendingPathComponent("keys")))
            _ = try await container.encryption!.setUp(in: container)
            var plain = container
            plain.encryption = nil
            try await run(
                on: container.privateCloudDatabase, plain: plain.privateCloudDatabase,
                storage: postgres == nil ? "SQLite" : "PostgreSQL", files: directory.appendingPathComponent("files"))
            await shutDown()
        } catch {
            await shutDown()
            throw error
        }
    }

    private func run(on database: Database, plain: Database, storage: String, files: URL) async throws {
        let zone = ZoneID(zoneName: "Bench")
        try await database.save(RecordZone(zoneID: zone))
        // Warm-up: the zone key is made and cached, the schema learns both record types.
        for mode in Mode.allCases {
            try await database.save(Self.record(mode, name: "warm-\(mode)", zone: zone, step: 0))
        }
        var single: [Mode: [Double]] = [:]
        var batched: [Mode: [Double]] = [:]
        for round in 0..<rounds {
            for mode in round % 2 == 0 ? [Mode.plain, .encrypted] : [.encrypted, .plain] {
                single[mode, default: []].append(try await singleSaves(mode, round: round, zone: zone, on: database))
                batched[mode, default: []].append(try await batchedWrites(mode, round: round, zone: zone, on: database))
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let singlePlain = median(single[.plain]!), singleSealed = median(single[.encrypted]!)
        let batchPlain = median(batched[.plain]!), batchSealed = median(batched[.encrypted]!)
        print("nimbus-bench encryption (\(storage), \(rounds) rounds, medians over rounds)")
        /// The spread of the per-round costs (each round's encrypted over plain).
        func spread(_ ratios: [Double]) -> String {
            let sorted = ratios.sorted()
            return String(format: "rounds %+.1f … %+.1f %%", (sorted.first! - 1) * 100, (sorted.last! - 1) * 100)
        }
        let singleRatios = (0..<rounds).map { single[.encrypted]![$0] / single[.plain]![$0] }
        let batchRatios = (0..<rounds).map { batched[.plain]![$0] / batched[.encrypted]![$0] }
        print(
            String(
                format: "  single-record save   plain %.3f ms   encrypted %.3f ms   cost %+.1f %% (",
                singlePlain, singleSealed, (singleSealed / singlePlain - 1) * 100) + spread(singleRatios) + "; target <= 10 %)")
        print(
            String(
                format: "  batched writes (%d)  plain %.0f rec/s   encrypted %.0f rec/s   cost %+.1f %% (",
                batch, batchPlain, batchSealed, (batchPlain / batchSealed - 1) * 100) + spread(batchRatios) + "; target <= 10 %)")
        guard assetMB > 0 else { return }
        let primitives = try EncryptionPrimitives.measure(bytes: assetMB * 1_000_000)
        print("  primitives (\(assetMB) MB in 256 KiB chunks, best of 3, this process): " + EncryptionPrimitives.report(primitives, bytes: assetMB * 1_000_000))
        let assets = try await EncryptionAssetBench(bytes: assetMB * 1_000_000, rounds: rounds, directory: files)
            .run(encrypted: database, plain: plain, zone: zone)
        for (name, times) in [("upload  ", assets.upload), ("download", assets.download)] {
            let plainTime = median(times[.plain]!), sealedTime = median(times[.encrypted]!)
            let ratios = (0..<rounds).map { times[.encrypted]![$0] / times[.plain]![$0] }.sorted()
            print(
                "  asset \(name) (\(assetMB) MB)"
                    + String(
                        format: "  plain %.3f s   encrypted %.3f s   cost %+.1f %% (rounds %+.1f … %+.1f %%; target <= 20 %%)",
                        plainTime, sealedTime, (sealedTime / plainTime - 1) * 100, (ratios.first! - 1) * 100,
                        (ratios.last! - 1) * 100))
        }
        // Whether the upload had cores to spare: the process's CPU time beside its wall time.
        print(
            String(
                format: "  asset upload CPU (client and server)  plain %.3f s   encrypted %.3f s (medians)",
                median(assets.uploadCPU[.plain]!), median(assets.uploadCPU[.encrypted]!)))
    }

    /// The mean milliseconds of one save (an update of one field, changed each time).
    private func singleSaves(_ mode: Mode, round: Int, zone: ZoneID, on database: Database) async throws -> Double {
        var record = try await database.save(Self.record(mode, name: "single-\(mode)-\(round)", zone: zone, step: 0))
        let start = ContinuousClock.now
        for step in 1...saves {
            var edited = record
            Self.setBody(&edited, mode, "entry \(step): " + String(repeating: "b", count: 190))
            record = try await database.save(edited)
        }
        return (ContinuousClock.now - start) / .milliseconds(1) / Double(saves)
    }

    /// Records created per second by `batches` requests of `batch` new records.
    private func batchedWrites(_ mode: Mode, round: Int, zone: ZoneID, on database: Database) async throws -> Double {
        let start = ContinuousClock.now
        for index in 0..<batches {
            let records = (0..<batch).map { Self.record(mode, name: "b-\(mode)-\(round)-\(index)-\($0)", zone: zone, step: $0) }
            let results = try await database.modifyRecords(saving: records, atomically: false)
            for result in results.saveResults.values { _ = try result.get() }
        }
        return Double(batches * batch) / ((ContinuousClock.now - start) / .seconds(1))
    }

    static func record(_ mode: Mode, name: String, zone: ZoneID, step: Int) -> Record {
        var record = Record(
            recordType: mode == .plain ? "PlainEntry" : "SealedEntry", recordID: Record.ID(recordName: name, zoneID: zone))
        record["title"] = "Entry \(step)"
        setBody(&record, mode, "entry \(step): " + String(repeating: "a", count: 190))
        if mode == .plain {
            record["mood"] = Int64(step % 5)
            record["tags"] = ["home", "travel", "work"]
        } else {
            record.encryptedValues["mood"] = Int64(step % 5)
            record.encryptedValues["tags"] = ["home", "travel", "work"]
        }
        return record
    }

    static func setBody(_ record: inout Record, _ mode: Mode, _ body: String) {
        if mode == .plain { record["body"] = body } else { record.encryptedValues["body"] = body }
    }
}
