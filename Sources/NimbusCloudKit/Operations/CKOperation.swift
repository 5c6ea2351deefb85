import Foundation
import Nimbus

/// The base of CloudKit's operations: an `Operation` that runs its requests when started
/// (on any `OperationQueue`, with dependencies across queues), reports through its callbacks,
/// and calls its final result block before it finishes, also when cancelled
/// (``CKError/Code/operationCancelled``).
///
/// ```swift
/// let save = CKModifyRecordsOperation(recordsToSave: [note])
/// let fetch = CKFetchRecordsOperation(recordIDs: [note.recordID])
/// fetch.addDependency(save)            // may sit on another queue
/// database.add(save)
/// otherQueue.addOperation(fetch)       // set `fetch.database` first
/// ```
///
/// `@unchecked Sendable` (as `Operation` is): every stored property of `CKOperation` and of
/// its subclasses is a constant or `@Protected` (a lock-guarded box), and the task that runs
/// the requests is held in a `Locked`; the operation's own state is `Operation`'s, which is
/// thread-safe.
open class CKOperation: Operation, @unchecked Sendable {
    /// How an operation runs (CloudKit's `CKOperation.Configuration`).
    ///
    /// `@unchecked Sendable`: every stored property is `@Protected`.
    public final class Configuration: NSObject, @unchecked Sendable {
        /// The container whose private database a database operation without a database uses.
        @Protected public var container: CKContainer? = nil
        @Protected public var qualityOfService: QualityOfService = .default
        /// Kept for source compatibility; every request may use any network.
        @Protected public var allowsCellularAccess: Bool = true
        /// Lists the operation, while it runs, among its container's long-lived operations
        /// (``CKContainer/allLongLivedOperationIDs()``). Nothing outlives the process here:
        /// after a relaunch an operation is not resumed.
        @Protected public var isLongLived: Bool = false
        /// How long one request may take.
        @Protected public var timeoutIntervalForRequest: TimeInterval = 60
        /// How long the whole operation may take.
        @Protected public var timeoutIntervalForResource: TimeInterval = 7 * 24 * 3600

        public override init() {}
    }

    /// The ID of an operation, for finding a long-lived one.
    public typealias ID = String

    /// A unique ID for this operation.
    public let operationID: ID = UUID().uuidString
    /// Called when a long-lived operation starts and is listed among its container's
    /// long-lived operations (CloudKit calls it once the operation is persisted).
    @Protected public var longLivedOperationWasPersistedBlock: (@Sendable () -> Void)? = nil
    @Protected private var configurationStorage: Configuration? = nil
    /// The group the operation belongs to (its default configuration applies when the
    /// operation's own was not set).
    @Protected public var group: CKOperationGroup? = nil
    /// The task running the operation's requests, while it runs.
    private let running = Locked<Task<Void, Never>?>(nil)
    /// Whether the final result block was called (it is called once).
    private let reported = Locked(false)

    public override init() {
        super.init()
    }

    /// How the operation runs.
    public var configuration: Configuration! {
        get {
            if let own = configurationStorage { return own }
            if let groups = group?.defaultConfiguration { return groups }
            let made = Configuration()
            configurationStorage = made
            return made
        }
        set { configurationStorage = newValue }
    }

    // MARK: - Running

    /// Reports cancellation through the final result block when the operation was cancelled
    /// before it started (the queue then finishes it without running it).
    open override func start() {
        if isCancelled {
            finishReporting(CKError(.operationCancelled, message: "the operation was cancelled"))
        } else if configuration.isLongLived {
            LongLivedOperations.started(self, container: containerIdentifier)
            longLivedOperationWasPersistedBlock?()
        }
        super.start()
    }

    /// The container the operation works in: its database's, else its configuration's.
    var containerIdentifier: String? {
        if let database = (self as? CKDatabaseOperation)?.targetDatabase {
            return database.nimbus?.container.identifier
        }
        return targetContainer.containerIdentifier
    }

    /// Runs ``execute()`` on a task and waits for it: the operation finishes after its
    /// callbacks, so dependent operations start after them.
    open override func main() {
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            await self.execute()
            done.signal()
        }
        running.withLock { $0 = task }
        if isCancelled { task.cancel() }
        done.wait()
        running.withLock { $0 = nil }
        LongLivedOperations.finished(self)
    }

    /// Cancels the operation: a request in flight is cancelled, and the final result block
    /// reports ``CKError/Code/operationCancelled``.
    open override func cancel() {
        super.cancel()
        running.current?.cancel()
    }

    /// The operation's work: subclasses send their requests, call their per-item blocks, and
    /// end with ``finishReporting(_:)``.
    func execute() async {
        finishReporting(nil)
    }

    /// Calls the subclass's final result block once (`nil`: success).
    final func finishReporting(_ error: CKError?) {
        let first = reported.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { reportFinal(error) }
    }

    /// The subclass's final result block.
    func reportFinal(_ error: CKError?) {}

    /// The error of a cancelled operation, or `nil` while it may go on.
    var cancellationError: CKError? {
        isCancelled || Task.isCancelled ? CKError(.operationCancelled, message: "the operation was cancelled") : nil
    }
}

/// Operations that belong together (one user action), for the server's logs: CloudKit's
/// `CKOperationGroup`.
///
/// `@unchecked Sendable`: every stored property is a constant or `@Protected`.
public final class CKOperationGroup: NSObject, @unchecked Sendable {
    /// How much data a group is expected to move.
    public enum TransferSize: Int, Sendable {
        case unknown = 0, kilobytes, megabytes, tensOfMegabytes, hundredsOfMegabytes, gigabytes,
            tensOfGigabytes, hundredsOfGigabytes
    }

    public let operationGroupID = UUID().uuidString
    @Protected private var defaultConfigurationStorage: CKOperation.Configuration? = CKOperation.Configuration()
    @Protected public var name: String? = nil
    @Protected public var quantity: Int = 0
    @Protected public var expectedSendSize: TransferSize = .unknown
    @Protected public var expectedReceiveSize: TransferSize = .unknown

    public override init() {}

    /// The configuration of the group's operations that have none of their own.
    public var defaultConfiguration: CKOperation.Configuration! {
        get { defaultConfigurationStorage }
        set { defaultConfigurationStorage = newValue }
    }
}

/// An operation on one database: ``database``, or the private database of the configured
/// container (or of `CKContainer.default()`) when it is not set, as in CloudKit.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKDatabaseOperation: CKOperation, @unchecked Sendable {
    @Protected public var database: CKDatabase? = nil

    /// The database the operation runs against.
    var targetDatabase: CKDatabase {
        database ?? configuration?.container?.privateCloudDatabase ?? CKContainer.default().privateCloudDatabase
    }
}
