import Foundation
import GRDB
import Nimbus
import NimbusProtocol
import NimbusSync

/// A local folder kept in sync with the documents zone of the user's private database: iCloud
/// Drive's folder for an app, on Nimbus.
///
/// ```swift
/// let documents = try DocumentsFolder(
///     folder: URL(fileURLWithPath: "/home/ana/Nimbus"), container: container,
///     stateDirectory: supportDirectory, device: "Ana's laptop")
/// try await documents.start()                          // first sync: merges what is there
/// await documents.listen(to: PushClient(container: container))
/// for item in try documents.items() { print(item.path, item.size, item.downloadingStatus) }
/// ```
///
/// Each file is a record of type `DocumentFile` with its bytes as an asset, each folder a
/// record of type `DocumentFolder` ([DOCUMENTS.md](docs/DOCUMENTS.md) gives the format). A
/// ``sync()`` pass fetches, scans the folder for what changed behind the app's back (created,
/// changed, moved, renamed, deleted), sends, and writes what the other devices changed. A
/// rename or move changes fields only: the bytes are not uploaded again. Names are made
/// valid and collision-free the same way on every device (``SiblingNames``). When two
/// devices change one file at once, neither edit is lost: the losing one is kept beside it as
/// a conflict version (``unresolvedConflictVersions(of:)``).
public actor DocumentsFolder {
    /// The zone of the user's private database that holds the documents.
    public static let zone = "NimbusDocuments"
    /// The ID of the database subscription the folder's engine keeps.
    public static let subscriptionID = "nimbus-documents"

    /// Whether every document's bytes are kept on the device (as on the Mac) or only those the
    /// app asks for (as on iOS: the others are listed, with their size, but not downloaded).
    public enum DownloadPolicy: Sendable, Hashable {
        case keepEverythingLocal
        case onDemand
    }

    /// The engine that syncs ``zone``.
    public nonisolated let engine: SyncEngine
    /// Reads and writes the synced folder.
    public nonisolated let reader: FolderReader
    /// This device's name, written into the files it changes and into its conflict versions.
    public nonisolated let device: String
    public nonisolated let policy: DownloadPolicy
    /// Where staged copies wait for their upload (outside the synced folder).
    nonisolated let staging: URL
    nonisolated let makeRecordName: @Sendable () -> String
    nonisolated let now: @Sendable () -> Date

    private var running: Task<Void, any Error>?
    private var listener: Task<Void, Never>?
    private var watcher: FolderWatcher?
    private var watching: Task<Void, Never>?
    var observers: [UUID: AsyncStream<[DocumentItem]>.Continuation] = [:]

    /// A folder synced by `engine`, whose configuration must sync ``zone`` (see
    /// ``configuration(subscriptionID:)``).
    ///
    /// - Parameters:
    ///   - folder: the synced folder (created if missing). Turning sync on for a folder that
    ///     has files merges them at the first ``sync()``.
    ///   - stateDirectory: where the library keeps staged uploads; not inside `folder`.
    ///   - makeRecordName: names new records (random UUIDs by default).
    public init(
        folder: URL, engine: SyncEngine, stateDirectory: URL, device: String, policy: DownloadPolicy = .keepEverythingLocal,
        makeRecordName: @escaping @Sendable () -> String = { "doc-" + UUID().uuidString.lowercased() }
    ) throws {
        precondition(engine.configuration.zones.contains(Self.zone), "the engine must sync DocumentsFolder.zone")
        let root = folder.standardizedFileURL
        let state = stateDirectory.standardizedFileURL
        if state.path == root.path || state.path.hasPrefix(root.path + "/") {
            throw DocumentsError.pathEscapesFolder(state.path)
        }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let staging = state.appendingPathComponent("staging", isDirectory: true)
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        self.staging = staging
        self.engine = engine
        self.reader = FolderReader(root: root)
        self.device = device
        self.policy = policy
        self.makeRecordName = makeRecordName
        self.now = engine.store.clock.now
        try engine.store.write { db, _ in try DocumentsState.create(db) }
    }

    /// A folder for the container's signed-in user; the library's state (`documents.sqlite`,
    /// staged uploads) in `stateDirectory`.
    public init(
        folder: URL, container: Container, stateDirectory: URL, device: String, policy: DownloadPolicy = .keepEverythingLocal
    ) throws {
        try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: true)
        let store = try LocalStore(path: stateDirectory.appendingPathComponent("documents.sqlite").path)
        let engine = SyncEngine(
            service: DatabaseSyncService(database: container.privateCloudDatabase), store: store,
            configuration: Self.configuration())
        try self.init(folder: folder, engine: engine, stateDirectory: stateDirectory, device: device, policy: policy)
    }

    /// The sync configuration of a documents engine: its zone and subscription, and the
    /// server's version winning a field both devices changed (this device's edit is then
    /// kept as a conflict version, see ``unresolvedConflictVersions(of:)``).
    public static func configuration(subscriptionID: String = DocumentsFolder.subscriptionID) -> SyncConfiguration {
        SyncConfiguration(zones: [zone], subscriptionID: subscriptionID, defaultMergeRules: MergeRules(defaultPolicy: .serverWins))
    }

    // MARK: - Syncing

    /// The first sync: creates the zone and subscription if needed, then runs ``sync()``.
    public func start() async throws {
        try await engine.start()
        try await sync()
    }

    /// One pass: fetches the other devices' changes, scans the folder for this device's
    /// (including those made behind the app's back), sends them, keeps any edit a conflict
    /// took over as a conflict version, and writes the others' changes to disk. Passes run
    /// one at a time.
    public func sync() async throws {
        try await oneAtATime { try await self.pass() }
    }

    /// Scans the folder and queues what changed, without the network: the changes go with
    /// the next ``sync()`` (work done offline catches up then).
    public func scan() async throws {
        try await oneAtATime { try await self.scanAndQueue() }
    }

    /// Runs `body` after every pass or scan started before it.
    private func oneAtATime(_ body: @escaping @Sendable () async throws -> Void) async throws {
        let previous = running
        let task = Task {
            _ = await previous?.result
            try await body()
        }
        running = task
        try await task.value
    }

    private func pass() async throws {
        try await engine.fetchChanges()
        try scanAndQueue()
        try await engine.sendChanges()
        try await writeToDisk()
        // Edits a conflict took over become versions, sent at once; the second round confirms
        // them (a new record's save meets no conflict).
        for _ in 0..<3 {
            guard try keepLostEdits() else { break }
            try await engine.sendChanges()
            try await writeToDisk()
        }
        notifyObservers()
    }

    /// Syncs when a push says the zone changed, and sends what is pending when the push
    /// channel (re)connects. The folder itself is scanned at each ``sync()``: ``watch()`` runs
    /// one when it changes, ``run(every:clock:)`` on a timer.
    public func listen(to push: PushClient) async {
        await engine.listen(to: push)
        let events = engine.events()
        listener?.cancel()
        listener = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                switch event {
                case .fetched(let zone, _, _) where zone == Self.zone: try? await self.sync()
                case .pushConnectionChanged(let state) where state.isConnected: try? await self.sync()
                default: break
                }
            }
        }
    }

    /// Watches the folder: a change in it (a file written, created, deleted, moved or renamed,
    /// here or behind the app's back) starts a ``sync()`` at once, without waiting for a poll.
    /// Changes that arrive while a pass runs are taken by one pass after it. Returns `false`
    /// where the platform gives no file-system events to this library (inotify on Linux is
    /// used; on Apple platforms, poll with ``run(every:clock:)``). Keep polling anyway, less
    /// often, as the fallback for what events miss (a folder on a network file system).
    @discardableResult
    public func watch() -> Bool {
        if watcher != nil { return true }
        let (changes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        guard let watcher = FolderWatcher(reader: reader, changed: { continuation.yield() }) else { return false }
        self.watcher = watcher
        watching = Task { [weak self] in
            for await _ in changes {
                guard let self else { return }
                try? await self.sync()
            }
        }
        return true
    }

    /// Syncs every `interval` on `clock` until the task is cancelled (the folder is polled:
    /// changes made behind the app's back are found at the next pass; ``watch()`` finds them
    /// at once where the platform allows).
    public func run(every interval: Duration, clock: SyncClock = .system) async {
        while !Task.isCancelled {
            try? await sync()
            do { try await clock.sleep(interval) } catch { return }
        }
    }

    /// Stops syncing (turning sync off): no more pushes or passes. The folder's files stay.
    public func stop() async {
        listener?.cancel()
        listener = nil
        watcher?.stop()
        watcher = nil
        watching?.cancel()
        watching = nil
        await engine.stopListening()
    }

    // MARK: - Reading the records

    nonisolated func documents() throws -> [DocumentRecord] {
        try engine.store.records(inZone: Self.zone).compactMap(DocumentRecord.init)
    }

    nonisolated func knownItems() throws -> [KnownItem] {
        try engine.store.read { db in try DocumentsState.known(db) }
    }
}
