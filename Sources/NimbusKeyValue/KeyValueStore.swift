import Foundation
import GRDB
import NIOConcurrencyHelpers
import Nimbus
import NimbusProtocol
import NimbusSync

/// iCloud's key-value store on Nimbus: small values that follow the user to every device, in
/// the shape of `NSUbiquitousKeyValueStore`.
///
/// ```swift
/// let preferences = try KeyValueStore(container: container, directory: supportDirectory)
/// Task {
///     for await change in preferences.changes() where change.keys.contains("theme") {
///         applyTheme(preferences.string(forKey: "theme"))
///     }
/// }
/// try await preferences.start()                       // first sync
/// await preferences.listen(to: PushClient(container: container))
/// try preferences.set("dark", forKey: "theme")        // here at once, on other devices by push
/// ```
///
/// Reads never touch the network: they answer from this device's copy. A write is applied
/// here at once and kept until it reaches the server (offline writes are sent when the
/// device is back); the value last written on the server wins, key by key. Another device's
/// change arrives by push, and ``changes()`` names the keys it changed and why.
///
/// Each key is one record in zone ``zone`` of the user's private database, synced by a
/// ``NimbusSync/SyncEngine`` of its own (its own local database and subscription), so the app's
/// other sync is untouched by it.
public final class KeyValueStore: Sendable {
    /// The zone of the user's private database that holds the keys.
    public static let zone = "NimbusKeyValue"
    /// The record type of a key.
    public static let recordType = "KeyValue"
    /// The ID of the database subscription the store's engine keeps.
    public static let subscriptionID = "nimbus-key-value"

    /// The engine that syncs the store's zone; `nil` for a store kept on this device only
    /// (``init(localStore:limits:)``).
    public let engine: SyncEngine?
    /// This device's copy of the keys and the writes not yet sent.
    public let localStore: LocalStore
    public let limits: KeyValueLimits
    /// Whether a write starts a send at once (the default); `false` leaves writes pending
    /// until ``synchronize()``.
    public let sendsAutomatically: Bool

    private let state: NIOLockedValueBox<ObserverState>
    private let watcher: NIOLockedValueBox<Task<Void, Never>?>

    private struct ObserverState {
        var subscribers: [UUID: AsyncStream<KeyValueChange>.Continuation] = [:]
        /// No fetch of the zone has completed on this device yet: the first one is the initial sync.
        var awaitingInitialSync: Bool
        /// The keys as last reported, to name what an account change took away.
        var keys: Set<String>
    }

    /// A store over `engine`, whose configuration must sync ``zone`` (see
    /// ``configuration(subscriptionID:)``).
    public convenience init(engine: SyncEngine, limits: KeyValueLimits = .iCloud, sendsAutomatically: Bool = true) throws {
        precondition(engine.configuration.zones.contains(Self.zone), "the engine must sync KeyValueStore.zone")
        try self.init(engine: engine, localStore: engine.store, limits: limits, sendsAutomatically: sendsAutomatically)
    }

    /// A store kept on this device only, in `localStore`, until the app has a server to sync
    /// with: its writes wait in the outbox, and a store over an engine on the same local store
    /// sends them later.
    public convenience init(localStore: LocalStore, limits: KeyValueLimits = .iCloud) throws {
        try self.init(engine: nil, localStore: localStore, limits: limits, sendsAutomatically: false)
    }

    /// A store kept on this device only, its copy in `directory` (`keyvalue.sqlite`, created if
    /// new): the same file ``init(container:directory:limits:sendsAutomatically:)`` syncs later.
    public convenience init(localDirectory directory: String, limits: KeyValueLimits = .iCloud) throws {
        try self.init(localStore: Self.openLocalStore(in: directory), limits: limits)
    }

    static func openLocalStore(in directory: String) throws -> LocalStore {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try LocalStore(path: (directory as NSString).appendingPathComponent("keyvalue.sqlite"))
    }

    private init(engine: SyncEngine?, localStore: LocalStore, limits: KeyValueLimits, sendsAutomatically: Bool) throws {
        self.engine = engine
        self.localStore = localStore
        self.limits = limits
        self.sendsAutomatically = sendsAutomatically
        let (fetched, keys) = try localStore.read { db in
            (try LocalStore.hasFetched(zone: Self.zone, in: db), Set(try Self.entries(db).keys))
        }
        state = NIOLockedValueBox(ObserverState(awaitingInitialSync: !fetched, keys: keys))
        watcher = NIOLockedValueBox(nil)
        guard let engine else { return }
        let events = engine.events()
        let task = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                self.observe(event)
            }
        }
        watcher.withLockedValue { $0 = task }
    }

    /// A store for the container's signed-in user, its local copy in `directory`
    /// (`keyvalue.sqlite`, created if new).
    public convenience init(
        container: Container, directory: String, limits: KeyValueLimits = .iCloud, sendsAutomatically: Bool = true
    ) throws {
        let store = try Self.openLocalStore(in: directory)
        let engine = SyncEngine(
            service: DatabaseSyncService(database: container.privateCloudDatabase), store: store,
            configuration: Self.configuration())
        try self.init(engine: engine, limits: limits, sendsAutomatically: sendsAutomatically)
    }

    deinit {
        watcher.withLockedValue { $0?.cancel() }
        for continuation in state.withLockedValue({ Array($0.subscribers.values) }) { continuation.finish() }
    }

    /// The sync configuration of a key-value store's engine: its zone, its own subscription,
    /// and the device's write winning a conflict (so the write that reaches the server last wins).
    public static func configuration(subscriptionID: String = KeyValueStore.subscriptionID) -> SyncConfiguration {
        SyncConfiguration(
            zones: [zone], subscriptionID: subscriptionID, defaultMergeRules: MergeRules(defaultPolicy: .clientWins))
    }

    // MARK: - Syncing

    /// The first sync: creates the zone and subscription if needed, fetches, and sends what is
    /// pending. Idempotent; call it at launch.
    public func start() async throws {
        try await engine?.start()
    }

    /// Fetches when a push arrives on `push`, and sends what is pending each time it
    /// (re)connects: writes made offline reach the server when the device is back.
    public func listen(to push: PushClient) async {
        await engine?.listen(to: push)
    }

    /// Sends this device's pending writes and fetches the others' (`NSUbiquitousKeyValueStore`'s
    /// `synchronize()`); `false` if either failed (the writes stay pending and are tried again).
    @discardableResult
    public func synchronize() async -> Bool {
        guard let engine else { return false }
        do {
            try await engine.sendChanges()
            try await engine.fetchChanges()
            return true
        } catch {
            return false
        }
    }

    // MARK: - Reading (this device's copy; no network)

    /// The value of `key`, or `nil`.
    public func object(forKey key: String) -> KeyValue? {
        let name = KeyValueRecord.recordName(for: key)
        guard let record = try? localStore.read({ db in try LocalStore.record(in: db, zone: Self.zone, name: name) }),
            let entry = KeyValueRecord.entry(record)
        else { return nil }
        return try? KeyValueCoding.decode(entry.encoded)
    }

    /// Every key and its value.
    public var dictionaryRepresentation: [String: KeyValue] {
        (try? localStore.read { db in try Self.entries(db) }) ?? [:]
    }

    /// The bytes `key` counts for against ``KeyValueLimits`` (its UTF-8 and its value as it
    /// travels), or `nil` for an absent key.
    public func size(ofKey key: String) -> Int? {
        object(forKey: key).flatMap { try? Self.sizes(of: [key: $0])[key] }
    }

    // MARK: - Writing

    /// Sets `key` to `value` (`nil` removes it), here at once and on the server with the next send.
    ///
    /// - Throws: ``KeyValueError`` when the key or the store would break ``limits``; the store
    ///   is then unchanged and ``changes()`` reports a ``KeyValueChange/Reason/quotaViolation``.
    public func set(_ value: KeyValue?, forKey key: String) throws {
        guard let value else { return try removeObject(forKey: key) }
        let encoded = try KeyValueCoding.encode(value)
        let size = KeyValueRecord.size(key: key, encoded: encoded)
        let limits = self.limits
        let refusal = try localStore.write { db, outbox -> KeyValueError? in
            let sizes = try Self.sizes(of: Self.entries(db))
            if let violation = limits.violation(key: key, size: size, in: sizes) { return violation }
            try outbox.save(KeyValueRecord.record(key: key, encoded: encoded))
            return nil
        }
        if let refusal {
            if case .quotaExceeded = refusal { emit(KeyValueChange(reason: .quotaViolation, keys: [key])) }
            throw refusal
        }
        state.withLockedValue { _ = $0.keys.insert(key) }
        sendSoon()
    }

    /// Removes `key` here at once and on the server with the next send.
    public func removeObject(forKey key: String) throws {
        let removed = try localStore.write { db, outbox -> Bool in
            let name = KeyValueRecord.recordName(for: key)
            guard try LocalStore.record(in: db, zone: Self.zone, name: name) != nil else { return false }
            try outbox.delete(zone: Self.zone, recordName: name)
            return true
        }
        guard removed else { return }
        state.withLockedValue { _ = $0.keys.remove(key) }
        sendSoon()
    }

    private func sendSoon() {
        guard sendsAutomatically, let engine else { return }
        Task { try? await engine.sendChanges() }
    }

    // MARK: - Changes

    /// Changes that did not come from this device's own writes: another device's, the first
    /// sync, an account change, or a write refused by the limits. Each call returns a new
    /// subscriber, which receives every change after this call returns.
    public func changes() -> AsyncStream<KeyValueChange> {
        let (stream, continuation) = AsyncStream<KeyValueChange>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        state.withLockedValue { $0.subscribers[id] = continuation }
        continuation.onTermination = { [state] _ in _ = state.withLockedValue { $0.subscribers.removeValue(forKey: id) } }
        return stream
    }

    private func emit(_ change: KeyValueChange) {
        for continuation in state.withLockedValue({ Array($0.subscribers.values) }) { continuation.yield(change) }
    }

    /// Turns the engine's events into the store's changes.
    private func observe(_ event: SyncEvent) {
        switch event {
        case .fetched(let zone, let saved, let deleted) where zone == Self.zone:
            let keys = saved.compactMap { KeyValueRecord.entry($0)?.key } + deleted.compactMap(KeyValueRecord.key(forRecordName:))
            guard !keys.isEmpty else { return }
            let (initial, current) = refreshKeys(afterFetch: true)
            emit(KeyValueChange(reason: initial ? .initialSync : .serverChange, keys: keys.sorted()))
            if let over = overLimits(current) { emit(KeyValueChange(reason: .quotaViolation, keys: over)) }
        case .stateSaved:
            _ = refreshKeys(afterFetch: true)
        case .accountChanged:
            // The old account's copy was set aside: every key it had, and every key the new one has, changed.
            let before = state.withLockedValue { $0.keys }
            let (_, after) = refreshKeys(afterFetch: false)
            let changed = before.union(after.keys)
            if !changed.isEmpty { emit(KeyValueChange(reason: .accountChange, keys: changed.sorted())) }
        case .pushConnectionChanged(let connection) where connection.isConnected:
            sendSoon()
        default:
            break
        }
    }

    /// Re-reads the keys; after a fetch, also ends the initial sync. Returns whether the
    /// fetch was the initial sync, and the entries now.
    private func refreshKeys(afterFetch: Bool) -> (initial: Bool, entries: [String: KeyValue]) {
        let entries = dictionaryRepresentation
        let initial = state.withLockedValue { state -> Bool in
            let initial = state.awaitingInitialSync
            if afterFetch { state.awaitingInitialSync = false }
            state.keys = Set(entries.keys)
            return initial
        }
        return (initial, entries)
    }

    /// The keys, largest first, beyond ``limits`` after other devices' writes arrived
    /// (each device checks its own writes; together they may still go over); `nil` within them.
    private func overLimits(_ entries: [String: KeyValue]) -> [String]? {
        guard let sizes = try? Self.sizes(of: entries) else { return nil }
        let total = sizes.values.reduce(0, +)
        guard sizes.count > limits.maximumKeys || total > limits.maximumTotalBytes else { return nil }
        return sizes.sorted { ($0.value, $0.key) > ($1.value, $1.key) }.map(\.key)
    }

    /// What each key counts for against the limits.
    static func sizes(of entries: [String: KeyValue]) throws -> [String: Int] {
        try entries.reduce(into: [:]) { sizes, entry in
            sizes[entry.key] = KeyValueRecord.size(key: entry.key, encoded: try KeyValueCoding.encode(entry.value))
        }
    }

    static func entries(_ db: GRDB.Database) throws -> [String: KeyValue] {
        var entries: [String: KeyValue] = [:]
        for record in try LocalStore.records(in: db, zone: zone) {
            guard let entry = KeyValueRecord.entry(record), let value = try? KeyValueCoding.decode(entry.encoded) else {
                continue
            }
            entries[entry.key] = value
        }
        return entries
    }
}
