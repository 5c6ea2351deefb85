import Foundation
import Logging
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import NimbusSync
import ReadingList

/// A real server on an ephemeral port (the shared ``ServerHarness``), one user, and devices
/// of that user (each its own directory, local store and sync engine, in the harness's directory).
final class TestWorld: ServerHarnessLayer {
    let harness: ServerHarness
    let container = "iCloud.com.example.news"
    let webAuthToken: String

    private init(harness: ServerHarness) async throws {
        self.harness = harness
        webAuthToken = try await harness.server.store.createUser(
            name: "reader", email: nil, firstName: nil, lastName: nil, container: harness.container
        ).token
    }

    /// Runs `body` in a fresh world and always stops it (server, storage and files), whether
    /// `body` returns or throws.
    static func with<T>(
        configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestWorld) async throws -> T
    ) async throws -> T {
        try await ServerHarness.with(container: "iCloud.com.example.news", configure: configure) {
            try await body(try await TestWorld(harness: $0))
        }
    }

    /// Stops the server, keeping its storage and the devices' directories.
    func stopServer() async {
        try? await harness.stopServer()
    }

    func deviceDirectory(_ name: String) -> String {
        (directory as NSString).appendingPathComponent("device-\(name)")
    }

    func configuration(_ name: String, serverURL: String? = nil) -> DeviceConfiguration {
        DeviceConfiguration(
            serverURL: serverURL ?? server.baseURL, container: container, apiToken: apiToken,
            webAuthToken: webAuthToken, deviceID: "device-\(name)")
    }

    /// A device set up through ``Device/initialize(directory:configuration:now:)``.
    func device(_ name: String, now: @escaping @Sendable () -> Int64 = ReadingList.wallClock) throws -> Device {
        try Device.initialize(directory: deviceDirectory(name), configuration: configuration(name), now: now)
    }

    /// A device whose engine talks through `wrap(service)` (to count calls).
    func engine(_ name: String, wrap: (any SyncService) -> any SyncService) throws -> ReadingList {
        let device = try self.device(name)
        let service = wrap(DatabaseSyncService(database: device.container.privateCloudDatabase))
        let store = try LocalStore(path: (deviceDirectory(name) as NSString).appendingPathComponent("wrapped.sqlite"))
        return ReadingList(
            engine: SyncEngine(service: service, store: store, configuration: ReadingListSchema.syncConfiguration()))
    }

    /// A device online: push channel connected, then setup and first fetch.
    func online(_ device: Device) async throws -> PushFeed {
        let feed = await PushFeed.start(client: device.pushClient(), engine: device.engine)
        try await feed.waitUntilConnected(timeout: .seconds(20))
        try await device.readingList.sync()
        return feed
    }
}

/// Counts the engine's calls by kind.
final class CountingService: SyncService, @unchecked Sendable {
    let base: any SyncService
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    init(_ base: any SyncService) { self.base = base }

    func count(_ name: String) -> Int { lock.withLock { counts[name, default: 0] } }
    func reset() { lock.withLock { counts = [:] } }
    private func enter(_ name: String) { lock.withLock { counts[name, default: 0] += 1 } }

    func currentUserRecordName() async throws -> String {
        enter("user")
        return try await base.currentUserRecordName()
    }
    func createZones(_ names: [String]) async throws {
        enter("zones")
        try await base.createZones(names)
    }
    func saveSubscription(_ subscription: Subscription) async throws {
        enter("subscription")
        try await base.saveSubscription(subscription)
    }
    func databaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges {
        enter("databaseChanges")
        return try await base.databaseChanges(since: token)
    }
    func zoneChanges(_ zone: String, since token: ServerChangeToken?) async throws -> RecordZoneChanges {
        enter("zoneChanges:\(zone)")
        return try await base.zoneChanges(zone, since: token)
    }
    func modify(saving: [Nimbus.Record], deleting: [Nimbus.Record.ID: String]) async throws -> (
        saveResults: [Nimbus.Record.ID: Result<Nimbus.Record, NimbusError>],
        deleteResults: [Nimbus.Record.ID: Result<Void, NimbusError>]
    ) {
        enter("modify")
        return try await base.modify(saving: saving, deleting: deleting)
    }
    func assetUploadURLs(zone: String, for fields: [AssetField]) async throws -> [URL] {
        enter("assetUploadURLs")
        return try await base.assetUploadURLs(zone: zone, for: fields)
    }
    func uploadAsset(
        _ file: URL, for field: AssetField, zone: String, to url: URL, resuming: Bool,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> Nimbus.Asset {
        enter("uploadAsset")
        return try await base.uploadAsset(file, for: field, zone: zone, to: url, resuming: resuming, progress: progress)
    }
    func downloadAsset(
        _ asset: Nimbus.Asset, to destination: URL, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws {
        enter("downloadAsset")
        try await base.downloadAsset(asset, to: destination, progress: progress)
    }
    func lookup(zone: String, recordName: String) async throws -> Nimbus.Record? {
        enter("lookup")
        return try await base.lookup(zone: zone, recordName: recordName)
    }
}

/// Output lines of a command, which a test can wait on.
final class OutputLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private var waiters: [UUID: (predicate: @Sendable ([String]) -> Bool, continuation: CheckedContinuation<Void, Never>)] =
        [:]

    var all: [String] { lock.withLock { lines } }
    var text: String { all.joined(separator: "\n") }

    func append(_ line: String) {
        let ready = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            lines.append(line)
            let current = lines
            let ready = waiters.filter { $0.value.predicate(current) }
            for id in ready.keys { waiters[id] = nil }
            return ready.values.map(\.continuation)
        }
        ready.forEach { $0.resume() }
    }

    /// Waits until the output satisfies `predicate` (a guard timeout fails the test).
    func wait(
        for what: String, timeout: Duration = .seconds(60), _ predicate: @escaping @Sendable ([String]) -> Bool
    ) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                let id = UUID()
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let ready = self.lock.withLock { () -> Bool in
                            if predicate(self.lines) || Task.isCancelled { return true }
                            self.waiters[id] = (predicate, continuation)
                            return false
                        }
                        if ready { continuation.resume() }
                    }
                } onCancel: {
                    self.lock.withLock { self.waiters.removeValue(forKey: id) }?.continuation.resume()
                }
                return predicate(self.all)
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            guard try await group.next() == true else {
                throw ReadingListError.timedOut("\(what); output so far:\n\(self.text)")
            }
        }
    }
}
