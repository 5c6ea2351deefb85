import Foundation
import NimbusProtocol

/// The base of the operation API: an asynchronous `Foundation.Operation` that works against
/// a ``database``. The SDK's counterpart of `CKDatabaseOperation`.
///
/// Operations run on any `OperationQueue` you own (or by calling `start()`); dependencies
/// work across queues, as with any `Operation`. Set the ``database``, the inputs and the
/// callbacks, then add the operation to a queue:
///
/// ```swift
/// let createZone = ModifyRecordZonesOperation(recordZonesToSave: [RecordZone(zoneName: "ReadingList")])
/// let subscribe = ModifySubscriptionsOperation(subscriptionsToSave: [subscription])
/// for operation in [createZone, subscribe] { operation.database = container.privateCloudDatabase }
/// let chain = SerialOperationChain(stopsOnFailure: true)
/// chain.add([createZone, subscribe], to: queue)
/// ```
///
/// Callbacks run on a background thread, per-item callbacks first and the final result
/// callback last, before the operation becomes finished (so dependents see its outcome).
/// `cancel()` cancels the request in flight; the result callback then reports
/// ``NimbusError/Code/operationCancelled``.
///
/// `@unchecked Sendable`: `Operation` is documented as safe to use from any thread, and every
/// property this class and its subclasses add is either immutable or `@Guarded` (read and
/// written under a lock).
public class DatabaseOperation: Operation, @unchecked Sendable {
    private struct State: Sendable {
        var isExecuting = false
        var isFinished = false
        var task: Task<Void, Never>?
        var error: NimbusError?
    }

    private let state = Locked(State())

    /// The database the operation works against. Required.
    @Guarded public var database: Database?

    /// Cancel this operation, without sending anything, when one of its dependencies is a
    /// ``DatabaseOperation`` that failed. ``SerialOperationChain`` sets it when it
    /// `stopsOnFailure`.
    @Guarded public var cancelsWhenDependencyFails = false

    /// Called as the operation makes progress: items (or zones, or pages) done and the total
    /// when known.
    @Guarded public var progressBlock: (@Sendable (_ completed: Int, _ total: Int?) -> Void)?

    /// The group this operation belongs to; setting it adds the operation to the group, so
    /// that cancelling the group cancels it.
    public var group: OperationGroup? {
        get { groupStorage }
        set {
            groupStorage = newValue
            newValue?.add(self)
        }
    }
    @Guarded private var groupStorage: OperationGroup?

    /// The operation's failure, once it has finished (`nil` on success). A
    /// ``NimbusError/Code/partialFailure`` when only some items failed.
    public var error: NimbusError? { state.current.error }

    override public init() {
        super.init()
    }

    override public var isAsynchronous: Bool { true }
    override public var isExecuting: Bool { state.current.isExecuting }
    override public var isFinished: Bool { state.current.isFinished }

    override public func start() {
        if isCancelled {
            complete(with: .failure(.cancelled()))
            return
        }
        if cancelsWhenDependencyFails,
            let failed = dependencies.lazy.compactMap({ $0 as? DatabaseOperation }).first(where: { $0.error != nil })
        {
            complete(with: .failure(NimbusError(
                .batchRequestFailed, "not run because an operation it depends on failed: \(failed.error!.message)")))
            return
        }
        guard let database else {
            complete(with: .failure(NimbusError(.invalidArguments, "the operation has no database; set `database`")))
            return
        }
        willChangeValue(forKey: "isExecuting")
        state.withLock { $0.isExecuting = true }
        didChangeValue(forKey: "isExecuting")
        let task = Task {
            let outcome = await self.execute(in: database)
            self.complete(with: Task.isCancelled ? .failure(.cancelled()) : outcome)
        }
        state.withLock { $0.task = task }
        if isCancelled { task.cancel() }
    }

    override public func cancel() {
        super.cancel()
        state.withLock { $0.task }?.cancel()
    }

    /// Does the work and reports items through the subclass's callbacks; returns the outcome
    /// for the final callback. Subclasses override it.
    func execute(in database: Database) async -> Result<Void, NimbusError> {
        .success(())
    }

    /// Calls the subclass's final result callback. Subclasses override it.
    func deliverResult(_ result: Result<Void, NimbusError>) {}

    /// Reports progress.
    func reportProgress(_ completed: Int, of total: Int?) {
        progressBlock?(completed, total)
    }

    private func complete(with result: Result<Void, NimbusError>) {
        let alreadyFinished = state.withLock { state -> Bool in
            if state.isFinished { return true }
            if case .failure(let error) = result { state.error = error }
            return false
        }
        if alreadyFinished { return }
        deliverResult(result)
        let wasExecuting = state.current.isExecuting
        if wasExecuting { willChangeValue(forKey: "isExecuting") }
        willChangeValue(forKey: "isFinished")
        state.withLock {
            $0.isExecuting = false
            $0.isFinished = true
            $0.task = nil
        }
        if wasExecuting { didChangeValue(forKey: "isExecuting") }
        didChangeValue(forKey: "isFinished")
    }
}

extension DatabaseOperation {
    /// Collects per-item failures into one ``NimbusError/Code/partialFailure``.
    static func outcome(_ failures: [NimbusError.ItemID: NimbusError], of total: Int) -> Result<Void, NimbusError> {
        guard !failures.isEmpty else { return .success(()) }
        return .failure(NimbusError(
            .partialFailure, "\(failures.count) of \(total) items failed", partialErrorsByItemID: failures))
    }
}
