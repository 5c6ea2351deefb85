import Foundation
import Logging
import Nimbus
import NimbusDocuments
import NimbusEngines
import NimbusKeyValue
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusSync

/// The runs of `nimbus-bench documents` (``DocumentsBenchCommand``) on one embedded server.
struct DocumentsBench: Sendable {
    let server: RunningServer
    let directory: URL
    let container: String
    let apiToken: String

    static func start(server: RunningServer, directory: URL, runID: String) async throws -> DocumentsBench {
        let container = "iCloud.nimbus.bench.\(runID)"
        let api = try await server.store.createContainer(container)
        return DocumentsBench(server: server, directory: directory, container: container, apiToken: api.token)
    }

    /// A new user of the container (an empty documents zone and key-value store); their web auth token.
    func newUser() async throws -> String {
        let name = "bench-\(UUID().uuidString.prefix(8).lowercased())"
        return try await server.store.createUser(name: name, email: nil, firstName: nil, lastName: nil, container: container).token
    }

    func shutDown(storage: StorageLocation, logger: Logger, keep: Bool) async {
        try? await server.stop()
        if !keep {
            try? await storage.removeAll(logger: logger)
            try? FileManager.default.removeItem(at: directory)
        }
    }

    func connection(_ webAuthToken: String, device: String) -> Container {
        Container(
            identifier: container, baseURL: URL(string: server.baseURL)!,
            credentials: .apiToken(apiToken, webAuthToken: webAuthToken), deviceID: device)
    }

    /// A device of the user: its synced folder `devices/<name>/folder` (which may already hold
    /// files), its state beside it.
    func device(_ name: String, webAuthToken: String) throws -> (folder: DocumentsFolder, root: URL, container: Container) {
        let base = directory.appendingPathComponent("devices").appendingPathComponent(name)
        let root = base.appendingPathComponent("folder")
        let container = connection(webAuthToken, device: name)
        let folder = try DocumentsFolder(
            folder: root, container: container, stateDirectory: base.appendingPathComponent("state"), device: name)
        return (folder, root, container)
    }

    func removeDevice(_ name: String) {
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("devices").appendingPathComponent(name))
    }

    // MARK: - First sync against a local copy

    /// Seconds of each round's copy, upload (A's first sync) and download (B's first sync).
    struct FirstSyncRow {
        var label: String
        var copy: [Double] = []
        var up: [Double] = []
        var down: [Double] = []

        var text: String {
            let upRatios = zip(up, copy).map { $0 / $1 }
            let downRatios = zip(down, copy).map { $0 / $1 }
            return "\(label), \(copy.count) rounds: cp -R \(Spread(copy).seconds); first sync on A (upload) "
                + "\(Spread(up).seconds), \(Spread(upRatios).ratio) the copy; first sync on B (download) "
                + "\(Spread(down).seconds), \(Spread(downRatios).ratio) the copy"
        }

        var json: JSON {
            func list(_ values: [Double]) -> JSON { .array(values.map { .double($0) }) }
            return .object([
                "label": .string(label), "copy_seconds": list(copy), "upload_seconds": list(up), "download_seconds": list(down),
                "upload_ratio_median": .double(Spread(zip(up, copy).map { $0 / $1 }).median),
                "download_ratio_median": .double(Spread(zip(down, copy).map { $0 / $1 }).median),
            ])
        }
    }

    /// `rounds` rounds of: `cp -R` of `source`, and a new user's first sync of a folder holding
    /// what `source` holds, on A (upload) then on B (download); the copy first in even rounds.
    func firstSyncs(of source: URL, files: Int, rounds: Int, label: String) async throws -> FirstSyncRow {
        var row = FirstSyncRow(label: label)
        let progress = Progress(label: label, total: rounds)
        for round in 0..<rounds {
            let copyFirst = round % 2 == 0
            if copyFirst { row.copy.append(try copyTime(source, round: round)) }
            let (up, down) = try await syncTimes(source, files: files, round: round)
            row.up.append(up)
            row.down.append(down)
            if !copyFirst { row.copy.append(try copyTime(source, round: round)) }
            progress.update(round + 1)
        }
        progress.finish()
        return row
    }

    private func copyTime(_ source: URL, round: Int) throws -> Double {
        let target = directory.appendingPathComponent("copy-\(round)")
        let seconds = try Self.timed { try Self.copyFolder(source, to: target) }
        try FileManager.default.removeItem(at: target)
        return seconds
    }

    private func syncTimes(_ source: URL, files: Int, round: Int) async throws -> (up: Double, down: Double) {
        let token = try await newUser()
        let (up, down) = ("up-\(round)", "down-\(round)")
        // A's folder holds the files before sync is turned on (not timed).
        try Self.copyFolder(source, to: directory.appendingPathComponent("devices").appendingPathComponent(up).appendingPathComponent("folder"))
        let a = try device(up, webAuthToken: token)
        let upSeconds = try await Self.timed { try await a.folder.start() }
        let items = try await a.folder.items().filter { $0.kind == .file }
        guard items.count == files, items.allSatisfy({ !$0.isUploading }), try a.folder.engine.store.givenUp().isEmpty else {
            throw BenchError("A's first sync left \(items.filter(\.isUploading).count) of \(items.count) items unsent")
        }
        let b = try device(down, webAuthToken: token)
        let downSeconds = try await Self.timed { try await b.folder.start() }
        let downloaded = try await b.folder.items().filter { $0.kind == .file }
        guard downloaded.count == files, downloaded.allSatisfy(\.isDownloaded),
            Self.fileBytes(in: b.root) == Self.fileBytes(in: source)
        else { throw BenchError("B's first sync brought \(downloaded.filter(\.isDownloaded).count) of \(files) files") }
        await a.folder.stop()
        await b.folder.stop()
        removeDevice(up)
        removeDevice(down)
        return (upSeconds, downSeconds)
    }

    // MARK: - Save → other device

    /// A file written on A and synced until B's folder holds those bytes (B syncs on the push).
    func fileLatency(saves: Int, warmup: Int) async throws -> LatencySummary {
        let token = try await newUser()
        let a = try device("latency-a", webAuthToken: token)
        let b = try device("latency-b", webAuthToken: token)
        try await a.folder.start()
        try await b.folder.start()
        let events = b.folder.engine.events()
        await b.folder.listen(to: PushClient(container: b.container))
        try await Self.within(.seconds(30)) {
            for await event in events { if case .pushConnectionChanged(let state) = event, state.isConnected { return } }
            throw BenchError("the push channel never connected")
        }
        try await b.folder.sync()  // after the connection: from here on only pushes bring A's saves
        var latencies: [Double] = []
        let progress = Progress(label: "file saved on A → in B's folder", total: warmup + saves)
        for index in 0..<(warmup + saves) {
            let path = "notes/note-\(index % 10).txt"
            let content = "save \(index) " + UUID().uuidString
            let arrived = await b.folder.observe()
            let target = path.split(separator: "/").reduce(b.root) { $0.appendingPathComponent(String($1)) }
            let started = ContinuousClock.now
            let file = path.split(separator: "/").reduce(a.root) { $0.appendingPathComponent(String($1)) }
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(content.utf8).write(to: file)
            try await a.folder.sync()
            try await Self.within(.seconds(30)) {
                for await _ in arrived where (try? String(contentsOf: target, encoding: .utf8)) == content { return }
                throw BenchError("B stopped syncing")
            }
            if index >= warmup { latencies.append((ContinuousClock.now - started).milliseconds) }
            progress.update(index + 1)
        }
        progress.finish()
        await a.folder.stop()
        await b.folder.stop()
        return LatencySummary(latencies)
    }

    /// A key set on A until B's store holds the value and has reported the key changed.
    func keyValueLatency(saves: Int, warmup: Int) async throws -> LatencySummary {
        let token = try await newUser()
        let devices = directory.appendingPathComponent("devices")
        let a = try KeyValueStore(container: connection(token, device: "kv-a"), directory: devices.appendingPathComponent("kv-a").path)
        let bContainer = connection(token, device: "kv-b")
        let b = try KeyValueStore(container: bContainer, directory: devices.appendingPathComponent("kv-b").path)
        try await a.start()
        try await b.start()
        let events = b.engine!.events()
        await b.listen(to: PushClient(container: bContainer))
        try await Self.within(.seconds(30)) {
            for await event in events { if case .pushConnectionChanged(let state) = event, state.isConnected { return } }
            throw BenchError("the push channel never connected")
        }
        var latencies: [Double] = []
        let progress = Progress(label: "key set on A → on B", total: warmup + saves)
        for index in 0..<(warmup + saves) {
            let key = "setting-\(index % 10)"
            let value = KeyValue.string("value \(index)")
            let changes = b.changes()
            let started = ContinuousClock.now
            try a.set(value, forKey: key)
            try await Self.within(.seconds(30)) {
                for await change in changes where change.keys.contains(key) && b.object(forKey: key) == value { return }
                throw BenchError("B's store stopped reporting changes")
            }
            if index >= warmup { latencies.append((ContinuousClock.now - started).milliseconds) }
            progress.update(index + 1)
        }
        progress.finish()
        return LatencySummary(latencies)
    }
}

/// Median and range of a run's rounds.
struct Spread {
    var values: [Double]
    init(_ values: [Double]) { self.values = values.sorted() }

    var median: Double {
        guard !values.isEmpty else { return 0 }
        let middle = values.count / 2
        return values.count % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2
    }

    var seconds: String { String(format: "%.2f s [%.2f–%.2f]", median, values.first ?? 0, values.last ?? 0) }
    var ratio: String { String(format: "%.1f× [%.1f–%.1f]", median, values.first ?? 0, values.last ?? 0) }
}
