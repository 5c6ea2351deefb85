import Foundation
import Nimbus

/// CloudKit's sync engine: the app owns its data; the engine owns the pending changes and
/// the change tokens, fetches what changed on the server and sends what changed here,
/// telling its delegate through ``Event``s.
///
/// ```swift
/// var configuration = CKSyncEngine.Configuration(
///     database: container.privateCloudDatabase, stateSerialization: store.lastState, delegate: self)
/// let engine = CKSyncEngine(configuration)
/// engine.state.add(pendingRecordZoneChanges: [.saveRecord(contact.recordID)])   // sent soon
/// ```
///
/// With ``Configuration/automaticallySync`` (the default) the engine fetches at start and
/// whenever its database subscription's push arrives (over Nimbus's WebSocket push channel),
/// sends shortly after pending changes are added, and retries failed sends after the
/// server's `retryAfter`. One fetch or send runs at a time.
///
/// Every stored property is a constant of a `Sendable` type, so the class is `Sendable`.
public final class CKSyncEngine: Sendable {
    /// The database the engine syncs.
    public let database: CKDatabase
    /// The pending changes, tokens and user the engine keeps.
    public let state: State

    private let delegateReference: Locked<WeakDelegate>
    let automaticallySync: Bool
    let subscriptionID: CKSubscription.ID
    let runner = SyncRunner()
    /// How the engine waits (coalescing scheduled sends, retrying): injectable for tests.
    let sleep: @Sendable (Duration) async throws -> Void
    /// How long a scheduled send waits for more changes to arrive with it.
    let sendDelay: Duration
    /// The fetch or send running now (``cancelOperations()`` cancels it).
    let current = Locked<Task<Void, any Error>?>(nil)
    /// How many times ``cancelOperations()`` was called: a fetch or send asked for before the
    /// latest call, still waiting for its turn, is cancelled when its turn comes.
    let cancellations = Locked(0)
    /// The automatic sync's tasks (start, push listener, scheduled work).
    let background = Locked<[Task<Void, Never>]>([])
    let sendScheduled = Locked(false)
    let fetchScheduled = Locked(false)

    public convenience init(_ configuration: Configuration) {
        self.init(configuration, sendDelay: .milliseconds(200), sleep: { try await Task.sleep(for: $0) })
    }

    /// An engine with an injected wait (tests).
    init(
        _ configuration: Configuration, sendDelay: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.database = configuration.database
        self.state = State(configuration.stateSerialization)
        self.delegateReference = Locked(WeakDelegate(value: configuration.delegate))
        self.automaticallySync = configuration.automaticallySync
        self.subscriptionID = configuration.subscriptionID ?? "com.apple.CKSyncEngine.DatabaseSubscription"
        self.sleep = sleep
        self.sendDelay = sendDelay
        if automaticallySync { startAutomaticSync() }
    }

    deinit {
        for task in background.current { task.cancel() }
        current.current?.cancel()
    }

    var delegate: (any CKSyncEngineDelegate)? { delegateReference.current.value }

    /// Fetches what changed on the server since the engine's tokens, reporting it as events.
    /// The delegate's ``CKSyncEngineDelegate/nextFetchChangesOptions(_:syncEngine:)`` may
    /// change `options` first.
    public func fetchChanges(_ options: FetchChangesOptions = FetchChangesOptions()) async throws {
        try await exclusively { try await self.performFetch(reason: .manual, options: options) }
    }

    /// Sends the pending changes (in ``SendChangesOptions/scope``), reporting the results as events.
    /// - Throws: once the events are delivered, ``CKError/Code/partialFailure`` when some changes
    ///   failed (``CKError/partialErrorsByItemID`` has each one's error, by record or zone ID);
    ///   the error that stopped the send otherwise.
    public func sendChanges(_ options: SendChangesOptions = SendChangesOptions()) async throws {
        try await exclusively {
            let outcome = try await self.performSend(SendChangesContext(reason: .manual, options: options))
            if !outcome.failures.isEmpty { throw CKError.partialFailure(outcome.failures) }
        }
    }

    /// Cancels the fetch or send in progress and those waiting for their turn: each throws
    /// ``CKError/Code/operationCancelled``. What was sent before stays sent; what was not stays
    /// pending. A fetch or send asked for afterwards runs as usual.
    public func cancelOperations() async {
        cancellations.withLock { $0 += 1 }
        current.current?.cancel()
    }

    /// Runs `work` when no other fetch or send runs, as a task ``cancelOperations()`` can cancel.
    /// - Throws: what `work` throws, as a `CKError` (a cancellation as ``CKError/Code/operationCancelled``).
    func exclusively(_ work: @escaping @Sendable () async throws -> Void) async throws {
        let asked = cancellations.current
        await runner.acquire()
        guard cancellations.current == asked else {
            await runner.release()
            throw CKError(.operationCancelled, message: "the sync engine's operations were cancelled")
        }
        let task = Task { try await work() }
        current.withLock { $0 = task }
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        current.withLock { $0 = nil }
        await runner.release()
        do {
            try result.get()
        } catch {
            throw CKError.wrapping(error)
        }
    }

    /// Delivers an event to the delegate.
    func emit(_ event: Event) async {
        await delegate?.handleEvent(event, syncEngine: self)
    }

    func emitStateUpdate() async {
        await emit(.stateUpdate(.init(stateSerialization: state.serialization)))
    }
}

/// The delegate, held weakly.
struct WeakDelegate: Sendable {
    weak var value: (any CKSyncEngineDelegate)?
}

/// Lets one fetch or send run at a time, in the order they asked.
actor SyncRunner {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty { busy = false } else { waiters.removeFirst().resume() }
    }
}
