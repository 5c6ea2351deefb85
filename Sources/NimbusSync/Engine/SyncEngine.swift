import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusProtocol

/// Keeps a device's ``LocalStore`` in sync with a Nimbus private database.
///
/// ```swift
/// let engine = SyncEngine(
///     service: DatabaseSyncService(database: container.privateCloudDatabase),
///     store: try LocalStore(path: "device.sqlite"),
///     configuration: SyncConfiguration(zones: ["ReadingList", "ReadingHistory"]))
/// Task { for await event in engine.events() { … update the UI … } }
/// try await engine.start()                 // setup chain, first fetch, send the outbox
/// try engine.store.write { db, outbox in try outbox.save(bookmark) }
/// try await engine.sendChanges()
/// ```
///
/// Fetches run on launch, on push and on refresh: database changes first, then zone changes
/// for the changed zones only. Triggers that arrive while a fetch runs coalesce into at most
/// one follow-up fetch. Fetches and sends never overlap, so the local copy a send is based
/// on is always the one the last fetch left.
public actor SyncEngine {
    public nonisolated let store: LocalStore
    public nonisolated let configuration: SyncConfiguration
    /// How the engine reaches the server; replaced when a followed ``Account`` changes user
    /// (always under the engine's lock, together with the local data's account).
    var service: any SyncService
    /// Set while a followed ``Account`` is signed out: fetches and sends refuse to run.
    var signedOut = false
    var accountTask: Task<Void, Never>?
    let clock: SyncClock
    /// Retries of retryable errors, per ``SyncConfiguration/retryPolicy``, waiting on ``clock``.
    let retrier: Retrier

    private var lock = AsyncLock()
    private struct Runs {
        var inFlight: Task<Void, any Error>?
        var queued: Task<Void, any Error>?
    }
    private var runs: [Job: Runs] = [:]
    /// Event subscribers; behind a lock (not actor state) so ``events()`` can register
    /// synchronously from any context.
    private nonisolated let subscribers = NIOLockedValueBox<[UUID: AsyncStream<SyncEvent>.Continuation]>([:])
    var pushTask: Task<Void, Never>?
    /// What the diagnostics keep in memory (``diagnostics(pendingLimit:)``).
    nonisolated let memory: NIOLockedValueBox<DiagnosticsMemory>
    /// This engine's registration for the store's given-up changes.
    private nonisolated let giveUpObserver = UUID()
    /// Downloads into the asset cache in flight, by checksum (one per file, however many ask).
    var downloads: [String: Task<URL, any Error>] = [:]

    /// How many database fetches actually ran (triggers that coalesced do not count).
    public private(set) var fetchesRun = 0
    /// How many `records/modify` requests the engine sent.
    public private(set) var requestsSent = 0

    /// An engine over `store`, on the store's clock (``LocalStore/clock``): how it waits
    /// between retries, draws their jitter and reads the time.
    public init(service: any SyncService, store: LocalStore, configuration: SyncConfiguration) {
        self.init(service: service, store: store, configuration: configuration, ownClock: store.clock)
    }

    /// An engine whose clock is not its store's.
    @available(*, deprecated, message: "the engine reads its store's clock: pass it to LocalStore(path:clock:)")
    public init(service: any SyncService, store: LocalStore, configuration: SyncConfiguration, clock: SyncClock) {
        self.init(service: service, store: store, configuration: configuration, ownClock: clock)
    }

    private init(service: any SyncService, store: LocalStore, configuration: SyncConfiguration, ownClock clock: SyncClock) {
        self.service = service
        self.store = store
        self.configuration = configuration
        self.clock = clock
        let memory = NIOLockedValueBox(DiagnosticsMemory())
        self.memory = memory
        self.retrier = Retrier(
            policy: configuration.retryPolicy, sleep: clock.sleep, random: clock.random,
            onRetry: { _, error, delay in
                memory.withLockedValue {
                    $0.retrying(after: error, delay: delay, at: clock.now(), persisted: store.persistedThrottling)
                }
            })
        // Every change given up on this store (in a send, a fetch, an account switch) is an event.
        let (id, subscribers) = (giveUpObserver, subscribers)
        store.giveUpObservers.withLockedValue { observers in
            observers[id] = { changes in
                for continuation in subscribers.withLockedValue({ Array($0.values) }) { continuation.yield(.gaveUp(changes)) }
            }
        }
    }

    deinit {
        _ = store.giveUpObservers.withLockedValue { $0.removeValue(forKey: giveUpObserver) }
    }

    // MARK: - Events

    /// A stream of everything the engine does; each call returns a new subscriber, which
    /// receives every event emitted after this call returns.
    public nonisolated func events() -> AsyncStream<SyncEvent> {
        let (stream, continuation) = AsyncStream<SyncEvent>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        // Registered synchronously, so no event emitted after `events()` returns is missed.
        subscribers.withLockedValue { $0[id] = continuation }
        continuation.onTermination = { [subscribers] _ in
            _ = subscribers.withLockedValue { $0.removeValue(forKey: id) }
        }
        return stream
    }

    nonisolated func emit(_ event: SyncEvent) {
        let continuations = subscribers.withLockedValue { Array($0.values) }
        for continuation in continuations { continuation.yield(event) }
    }

    // MARK: - Lifecycle

    /// The launch sequence: account check, setup (zones, subscription), fetch, send.
    /// Idempotent and resumable: each setup step is recorded when done and skipped after.
    public func start() async throws {
        try refuseWhileSignedOut()
        try await withLock { try await self.checkAccount() }
        try await withLock { try await self.setUp() }
        try await fetchChanges()
        try await sendChanges()
    }

    /// Fetches when a push arrives on `notifications` (any `AsyncSequence` of the SDK's
    /// push notifications), until ``stopListening()``.
    public func listen<S: AsyncSequence & Sendable>(to notifications: S) where S.Element == PushNotification {
        pushTask?.cancel()
        memory.withLockedValue { $0.push = nil }  // a bare sequence of pushes has no connection to report
        pushTask = Task {
            do {
                // Each push only triggers a fetch; triggers coalesce (one fetch in flight, at
                // most one queued), so a burst of pushes costs at most two fetches.
                for try await notification in notifications { self.triggerFetch(trace: notification.trace) }
            } catch {}
        }
    }

    /// Schedules a fetch nobody awaits: its failure is reported as ``SyncEvent/fetchFailed(_:)``.
    /// A traced push's fetch continues the push's trace (when it does not coalesce into a
    /// fetch already queued).
    func triggerFetch(trace: RequestTrace? = nil) {
        let task =
            if let trace, configuration.tracesChanges {
                RequestTrace.$current.withValue(trace.child()) { scheduled(.fetch) }
            } else {
                scheduled(.fetch)
            }
        Task {
            if case .failure(let error) = await task.result { self.emit(.fetchFailed(error)) }
        }
    }

    /// Schedules a send nobody awaits: its failure is reported as ``SyncEvent/sendFailed(_:)``.
    func triggerSend() {
        let task = scheduled(.send)
        Task {
            if case .failure(let error) = await task.result { self.emit(.sendFailed(error)) }
        }
    }

    public func stopListening() {
        pushTask?.cancel()
        pushTask = nil
        memory.withLockedValue { $0.push = nil }
    }

    // MARK: - Coalesced triggers

    /// Work that triggers coalesce into: at most one run in flight and one queued behind it.
    enum Job: Hashable { case fetch, send }

    /// Fetches database changes, then the changed zones. If a fetch is running, this waits
    /// for one follow-up fetch (shared by every trigger that arrives meanwhile).
    public func fetchChanges() async throws {
        try await scheduled(.fetch).value
    }

    /// Sends the outbox. Coalesces like ``fetchChanges()``.
    public func sendChanges() async throws {
        try await scheduled(.send).value
    }

    /// Fetches one zone's changes only (pull-to-refresh).
    public func refresh(zone: String) async throws {
        try await withLock { try await self.fetchZone(zone) }
    }

    private func scheduled(_ job: Job) -> Task<Void, any Error> {
        if let queued = runs[job]?.queued { return queued }
        if let running = runs[job]?.inFlight {
            let task = Task {
                _ = await running.result
                try await self.promoteAndRun(job)
            }
            runs[job, default: Runs()].queued = task
            return task
        }
        let task = Task { try await self.run(job) }
        runs[job] = Runs(inFlight: task)
        return task
    }

    private func promoteAndRun(_ job: Job) async throws {
        runs[job] = Runs(inFlight: runs[job]?.queued)
        try await run(job)
    }

    private func run(_ job: Job) async throws {
        defer { if runs[job]?.queued == nil { runs[job] = nil } }
        try refuseWhileSignedOut()
        switch job {
        case .fetch:
            fetchesRun += 1
            try await withLock {
                try await self.refuseWhileSignedOut()
                try await self.fetchDatabase()
            }
            // Outside the lock: downloads do not hold up sends.
            // A failed download is reported, not thrown: the records were fetched.
            if let eager = configuration.eagerAssetBytes {
                do { _ = try await prefetchAssets(smallerThan: eager) } catch { emit(.fetchFailed(error)) }
            }
        case .send:
            // Each send is a trace of its own (unless the app's task already traces).
            let sampled = configuration.tracesChanges && clock.random() < configuration.traceSampleRate
            let trace = RequestTrace.current ?? (sampled ? RequestTrace.random() : nil)
            try await RequestTrace.$current.withValue(trace) {
                try await withLock {
                    // Checked again under the lock: a sign-out may have been taken in meanwhile.
                    try await self.refuseWhileSignedOut()
                    try await self.sendOutbox()
                }
            }
        }
    }

    // MARK: - Lock

    func withLock<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        if !lock.tryAcquire() {
            await withCheckedContinuation { continuation in lock.enqueue(continuation) }
        }
        defer { lock.release() }
        return try await body()
    }

    // MARK: - Retry

    /// Runs `body`, retrying retryable errors with the server's retryAfter or backoff.
    func retrying<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await retrier.run(body)
    }

    func countRequest() { requestsSent += 1 }
}
