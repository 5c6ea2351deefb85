import Foundation
import Logging
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import NIOConcurrencyHelpers
import NimbusSync

/// A deterministic random source (SplitMix64), so every schedule replays from its seed.
typealias SeededGenerator = SplitMix64

/// Wraps the real service to inject faults and count calls.
final class FaultyService: SyncService {
    let base: any SyncService
    /// Probability that a call is throttled (THROTTLED with a short retryAfter) before it runs.
    let throttleRate: Double
    /// `records/modify` batches larger than this fail with limitExceeded.
    let maxBatch: Int
    private let state: NIOLockedValueBox<(
        rng: SeededGenerator, calls: [String: Int], failures: [String: NimbusError], once: [String: NimbusError]
    )>

    /// The encrypted-asset format every upload is sealed in (an older build's), and the ones the
    /// engine asked for.
    private let assetFormats = NIOLockedValueBox((forced: UInt8?.none, asked: [UInt8?]()))

    /// Seals every later upload in asset format `format`, as a build that wrote it would.
    func sealAssets(inFormat format: UInt8?) { assetFormats.withLockedValue { $0.forced = format } }

    /// The format each upload was asked to continue in (`nil`: the build's own).
    var askedAssetFormats: [UInt8?] { assetFormats.withLockedValue { $0.asked } }

    init(base: any SyncService, seed: UInt64, throttleRate: Double = 0, maxBatch: Int = .max) {
        self.base = base
        self.throttleRate = throttleRate
        self.maxBatch = maxBatch
        self.state = NIOLockedValueBox((SeededGenerator(seed: seed), [:], [:], [:]))
    }

    func calls(_ name: String) -> Int { state.withLockedValue { $0.calls[name, default: 0] } }

    /// Makes every later call of `name` fail with `error` (nil: succeed again).
    func fail(_ name: String, with error: NimbusError?) {
        state.withLockedValue { $0.failures[name] = error }
    }

    /// Makes the next call of `name` fail with `error`, once.
    func failNext(_ name: String, with error: NimbusError) {
        state.withLockedValue { $0.once[name] = error }
    }

    /// Calls of a name that succeed before every later one fails, and with what.
    private let cutoffs = NIOLockedValueBox<[String: (calls: Int, error: NimbusError)]>([:])

    /// Lets the next `calls` calls of `name` through; every one after fails with `error` (the
    /// network gone, the app killed mid-fetch).
    func fail(_ name: String, after calls: Int, with error: NimbusError) {
        let made = self.calls(name)
        cutoffs.withLockedValue { $0[name] = (made + calls, error) }
    }

    /// What runs when a name is called, before the call goes on: given the call's number.
    private let onCall = NIOLockedValueBox<[String: @Sendable (Int) throws -> Void]>([:])

    /// Runs `body` on every later call of `name`, with the call's number (1 for the first
    /// call ever made), before the call reaches the server.
    func whenCalled(_ name: String, _ body: @escaping @Sendable (Int) throws -> Void) {
        onCall.withLockedValue { $0[name] = body }
    }

    private func enter(_ name: String) throws {
        let cutoff = cutoffs.withLockedValue { $0[name] }
        let hook = onCall.withLockedValue { $0[name] }
        let (throttled, failure, number) = state.withLockedValue { state -> (Bool, NimbusError?, Int) in
            state.calls[name, default: 0] += 1
            let number = state.calls[name, default: 0]
            if let cutoff, number > cutoff.calls { return (false, cutoff.error, number) }
            let throttled = throttleRate > 0 && Double.random(in: 0..<1, using: &state.rng) < throttleRate
            return (throttled, state.once.removeValue(forKey: name) ?? state.failures[name], number)
        }
        try hook?(number)
        if let failure { throw failure }
        if throttled {
            var error = NimbusError(.requestRateLimited, "injected throttle")
            error.retryAfterSeconds = 0.002
            throw error
        }
    }

    func currentUserRecordName() async throws -> String {
        try enter("user")
        return try await base.currentUserRecordName()
    }
    func createZones(_ names: [String]) async throws {
        try enter("zones")
        try await base.createZones(names)
    }
    func saveSubscription(_ subscription: Subscription) async throws {
        try enter("subscription")
        try await base.saveSubscription(subscription)
    }
    func databaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges {
        try enter("databaseChanges")
        return try await base.databaseChanges(since: token)
    }
    func zoneChanges(_ zone: String, since token: ServerChangeToken?) async throws -> RecordZoneChanges {
        try enter("zoneChanges:\(zone)")
        return try await base.zoneChanges(zone, since: token)
    }
    func zoneChanges(_ zone: String, since token: ServerChangeToken?, countingRemaining: Bool) async throws
        -> RecordZoneChanges
    {
        try enter("zoneChanges:\(zone)")
        return try await base.zoneChanges(zone, since: token, countingRemaining: countingRemaining)
    }
    func modify(saving: [Nimbus.Record], deleting: [Nimbus.Record.ID: String]) async throws -> (
        saveResults: [Nimbus.Record.ID: Result<Nimbus.Record, NimbusError>],
        deleteResults: [Nimbus.Record.ID: Result<Void, NimbusError>]
    ) {
        try enter("modify")
        if saving.count + deleting.count > maxBatch {
            throw NimbusError(.limitExceeded, "injected: at most \(maxBatch) items")
        }
        return try await base.modify(saving: saving, deleting: deleting)
    }
    func assetUploadURLs(zone: String, for fields: [AssetField]) async throws -> [URL] {
        try enter("assetUploadURLs")
        return try await base.assetUploadURLs(zone: zone, for: fields)
    }
    func uploadAsset(
        _ file: URL, for field: AssetField, zone: String, to url: URL, resuming: Bool,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> Nimbus.Asset {
        try enter(resuming ? "uploadAsset:resuming" : "uploadAsset")
        var field = field
        assetFormats.withLockedValue { formats in
            formats.asked.append(field.assetFormat)
            if let forced = formats.forced { field.assetFormat = forced }
        }
        return try await base.uploadAsset(file, for: field, zone: zone, to: url, resuming: resuming, progress: progress)
    }
    func downloadAsset(
        _ asset: Nimbus.Asset, to destination: URL, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws {
        try enter("downloadAsset")
        try await base.downloadAsset(asset, to: destination, progress: progress)
    }
    func lookup(zone: String, recordName: String) async throws -> Nimbus.Record? {
        try enter("lookup")
        return try await base.lookup(zone: zone, recordName: recordName)
    }
    func sharedDatabaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges {
        try enter("sharedDatabaseChanges")
        return try await base.sharedDatabaseChanges(since: token)
    }
    func saveSharedSubscription(_ subscription: Subscription) async throws {
        try enter("sharedSubscription")
        try await base.saveSharedSubscription(subscription)
    }
    func reportTraceSpans(_ spans: [TraceSpanReport]) async throws {
        try await base.reportTraceSpans(spans)
    }
}

/// A real server with one user (the shared ``ServerHarness``) and helpers to make devices
/// (engines with their own stores, in the harness's directory).
final class SyncHarness: ServerHarnessLayer {
    static let containerID = "iCloud.com.example.sync"
    let harness: ServerHarness
    let webToken: String

    /// The engine the suite's server runs on by default: PostgreSQL when
    /// `NIMBUS_SYNC_TEST_ENGINE=postgres` and `NIMBUS_TEST_POSTGRES_URL` names one, SQLite otherwise.
    static let defaultEngine: Engine =
        ProcessInfo.processInfo.environment["NIMBUS_SYNC_TEST_ENGINE"] == "postgres" && Engine.postgresURL != nil
        ? .postgres : .sqlite

    private init(harness: ServerHarness) async throws {
        self.harness = harness
        webToken = try await harness.server.store.createUser(
            name: "reader", email: nil, firstName: nil, lastName: nil, container: Self.containerID
        ).token
    }

    func container(device: String, webToken: String? = nil, assetTransport: (any AssetTransport)? = nil) -> Container {
        Container(
            identifier: Self.containerID, baseURL: URL(string: server.baseURL)!,
            credentials: .apiToken(apiToken, webAuthToken: webToken ?? self.webToken), deviceID: device,
            assetTransport: assetTransport)
    }

    /// Retry waits that wait for nothing (throttling is retried at once).
    static let noWaiting = SyncClock(sleep: { _ in
        try Task.checkCancellation()
        await Task.yield()
    })

    func storePath(_ device: String) -> String { "\(directory)/\(device)/local.sqlite" }

    /// An engine for `device` over its (persistent) local store.
    func engine(
        _ device: String, configuration: SyncConfiguration, seed: UInt64 = 1, throttleRate: Double = 0,
        maxBatch: Int = .max, webToken: String? = nil, assetTransport: (any AssetTransport)? = nil
    ) throws -> (SyncEngine, FaultyService) {
        let database = container(device: device, webToken: webToken, assetTransport: assetTransport).privateCloudDatabase
        let service = FaultyService(
            base: DatabaseSyncService(database: database),
            seed: seed, throttleRate: throttleRate, maxBatch: maxBatch)
        let engine = SyncEngine(
            service: service, store: try LocalStore(path: storePath(device), clock: Self.noWaiting),
            configuration: configuration)
        return (engine, service)
    }

    /// An engine of device `name` whose container holds the user's end-to-end keys in the
    /// device's own directory.
    func encryptedEngine(
        _ name: String, configuration: SyncConfiguration, webToken: String? = nil
    ) throws -> (SyncEngine, Container) {
        let (engine, container, _) = try encryptedDevice(name, configuration: configuration, webToken: webToken)
        return (engine, container)
    }

    /// ``encryptedEngine(_:configuration:webToken:)`` with its service, which counts calls,
    /// and an asset transport of the test's.
    func encryptedDevice(
        _ name: String, configuration: SyncConfiguration, webToken: String? = nil, assetTransport: (any AssetTransport)? = nil
    ) throws -> (SyncEngine, Container, FaultyService) {
        var container = container(device: name, webToken: webToken, assetTransport: assetTransport)
        container.encryption = EncryptionKeys(
            store: FileKeyStore(directory: URL(fileURLWithPath: "\(directory)/\(name)/keys")))
        let service = FaultyService(base: DatabaseSyncService(database: container.privateCloudDatabase), seed: 1)
        let engine = SyncEngine(
            service: service, store: try LocalStore(path: storePath(name), clock: Self.noWaiting), configuration: configuration)
        return (engine, container, service)
    }

    /// Runs `body` with a fresh harness on `engine` and always stops it (server, storage,
    /// devices' files), whether `body` returns or throws.
    static func with<T>(
        engine: Engine = defaultEngine, retention: Duration = .seconds(3600),
        configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (SyncHarness) async throws -> T
    ) async throws -> T {
        try await ServerHarness.with(
            engine, container: containerID,
            configure: {
                $0.tombstoneRetention = retention
                configure(&$0)
            }
        ) { try await body(try await SyncHarness(harness: $0)) }
    }
}

/// Waits for the first event matching `predicate`, failing after `timeout`.
func firstEvent(
    _ events: AsyncStream<SyncEvent>, timeout: Duration = .seconds(60), where predicate: @escaping @Sendable (SyncEvent) -> Bool
) async throws -> SyncEvent {
    try await withThrowingTaskGroup(of: SyncEvent?.self) { group in
        group.addTask {
            for await event in events where predicate(event) { return event }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        guard let result = try await group.next(), let event = result else {
            group.cancelAll()
            throw CancellationError()
        }
        group.cancelAll()
        return event
    }
}
