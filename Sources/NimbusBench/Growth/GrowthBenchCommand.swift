import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import NimbusEngines
import NimbusPostgres
import NimbusProtocol
import NimbusSQLite
import NimbusServer
import NimbusStore

/// `nimbus-bench growth`: how each cost grows with the database, 10k → 100k → 1M (→ 10M)
/// records, spread three ways (``GrowthSpread``). For each spread it starts an embedded
/// server on fresh storage, grows the records through the store and, at each size, times
/// the probes over HTTP (``GrowthProbes``), a compaction of 1,000 tombstones, the bytes on
/// disk per record and the process's resident memory. It prints a table, can write the
/// points as JSON, and draws the curves (cost relative to the first size) as a PNG.
struct GrowthBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "growth",
        abstract: "How cost grows with the database: 10k → 10M records, three spreads, curves as a PNG (build with -c release).")

    @Option(name: .long, help: "Sizes to measure at, comma-separated (records).")
    var sizes = "10000,100000,1000000"
    @Option(name: .long, help: "Spreads, comma-separated: zone (one zone), zones (100 zones), users (10,000 users).")
    var spreads = "zone,zones,users"
    @Option(name: .customLong("postgres-url"), help: "Run on PostgreSQL (a postgres:// URL); a fresh schema per spread, dropped afterwards.")
    var postgresURL: String?
    @Option(name: .long, help: "Single-record modifies timed at each size (query runs: a tenth of it).")
    var samples = 300
    @Option(name: .long, help: "Concurrent store writers while growing (default: 1 on SQLite, 4 on PostgreSQL).")
    var writers: Int?
    @Option(name: .long, help: "Write the curves to this PNG file.")
    var png: String?
    @Option(name: .customLong("json-file"), help: "Write the points to this JSON file.")
    var jsonFile: String?

    func validate() throws {
        guard !sizeList.isEmpty, sizeList == sizeList.sorted(), sizeList[0] >= 10_000 else {
            throw ValidationError("--sizes must be increasing record counts of at least 10000")
        }
        guard spreadList.count == spreads.split(separator: ",").count else {
            throw ValidationError("--spreads takes zone, zones and users")
        }
        guard samples >= 20 else { throw ValidationError("--samples must be at least 20") }
    }

    var sizeList: [Int] { sizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
    var spreadList: [GrowthSpread] { spreads.split(separator: ",").compactMap { GrowthSpread(rawValue: $0.trimmingCharacters(in: .whitespaces)) } }
    var engine: String { postgresURL == nil ? "SQLite" : "PostgreSQL" }

    func run() async throws {
        #if DEBUG
        FileHandle.standardError.write(Data("warning: this is a debug build; measure with `swift build -c release`\n".utf8))
        #endif
        MallocTuning.apply()
        var points: [GrowthPoint] = []
        for spread in spreadList {
            points += try await measure(spread)
        }
        let machine = MachineInfo.current()
        print(GrowthTable.text(points, engine: engine, machine: machine))
        if let jsonFile {
            let json = JSON.object([
                "machine": machine.json, "engine": .string(engine), "points": .array(points.map(\.json)),
            ])
            try Data(json.serializedBytes()).write(to: URL(fileURLWithPath: jsonFile))
        }
        if let png {
            let image = GrowthChart(points: points, title: "Nimbus \(engine): cost relative to \(Self.label(sizeList[0])) records").png()
            try Data(image).write(to: URL(fileURLWithPath: png))
        }
        fflush(nil)
    }

    private func measure(_ spread: GrowthSpread) async throws -> [GrowthPoint] {
        let runID = String(UUID().uuidString.prefix(8)).lowercased()
        var logger = Logger(label: "nimbus")
        logger.logLevel = .warning
        var configuration = ServerConfiguration(port: 0)
        configuration.tombstoneRetention = .zero
        configuration.compactionInterval = .seconds(365 * 24 * 3600)
        if let postgresURL {
            configuration.storage = .postgres(url: postgresURL, schema: "nimbus_growth_\(runID)")
        } else {
            configuration.storage = .sqlite(directory: FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-growth-\(runID)").path)
        }
        let storage = configuration.storage
        let server = try await RunningServer.start(configuration, logger: logger)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let points = try await measure(spread, server: server, http: http, runID: runID)
            try await http.shutdown()
            try await server.stop()
            try await storage.removeAll(logger: logger)
            return points
        } catch {
            try? await http.shutdown()
            try? await server.stop()
            try? await storage.removeAll(logger: logger)
            throw error
        }
    }

    private func measure(_ spread: GrowthSpread, server: RunningServer, http: HTTPClient, runID: String) async throws -> [GrowthPoint] {
        let credentials = try await BenchCommand.provision(server.store, runID: runID)
        guard let user = try await server.store.user(forWebAuthToken: credentials.webAuthToken) else {
            throw BenchError("the bench user has no identity")
        }
        let client = BenchClient(http: http, baseURL: server.baseURL, credentials: credentials)
        let probes = GrowthProbes(client: client, samples: samples)
        var data = GrowthData(
            store: server.store, spread: spread, writers: writers ?? (postgresURL == nil ? 1 : 4),
            container: credentials.container, probeUser: user.recordName)
        try await data.prepare()
        data.probeRecords += try await probes.createIndexes()
        var points: [GrowthPoint] = []
        for (step, size) in sizeList.enumerated() {
            let buildRate = try await data.grow(to: size)
            let records = data.live
            let write = try await probes.writeRate(step: step)
            let modify = try await probes.modify(step: step)
            data.probeRecords += write.created + modify.created
            let page = try await probes.changesPage()
            let queries = try await probes.queries()
            let deleted = try await data.deleteSome(1_000)
            let compactStart = ContinuousClock.now
            let report = try await server.compactNow()
            let compaction = (ContinuousClock.now - compactStart).seconds * 1000
            guard report.tombstonesRemoved >= deleted else {
                throw BenchError("compaction removed \(report.tombstonesRemoved) tombstones of \(deleted)")
            }
            let bytes = try await diskBytes(server)
            let point = GrowthPoint(
                spread: spread, records: records, buildRate: buildRate, writeRate: write.rate, modifyP50: modify.p50,
                modifyP99: modify.p99, feedPage: page, queryEquals: queries.equals, queryRange: queries.range,
                compaction: compaction, tombstones: report.tombstonesRemoved, bytesPerRecord: Double(bytes) / Double(data.live),
                residentMB: Double(ProcessMemory().read()?.residentBytes ?? 0) / 1_048_576)
            FileHandle.standardError.write(Data((GrowthTable.line(point) + "\n").utf8))
            points.append(point)
        }
        return points
    }

    /// The database's bytes on disk: PostgreSQL's schema, or SQLite's file (its WAL checkpointed).
    private func diskBytes(_ server: RunningServer) async throws -> Int64 {
        if let postgres = server.store as? PostgresStore { return try await postgres.diskBytes() }
        if let sqlite = server.store as? SQLiteStore { return try await sqlite.diskBytes() }
        return 0
    }

    static func label(_ records: Int) -> String {
        records >= 1_000_000 && records % 1_000_000 == 0 ? "\(records / 1_000_000)M"
            : records >= 1_000 && records % 1_000 == 0 ? "\(records / 1_000)k" : "\(records)"
    }
}
