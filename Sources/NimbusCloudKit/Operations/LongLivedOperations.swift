import Foundation
import Nimbus

/// The long-lived operations running in this process.
///
/// CloudKit keeps a long-lived operation running in a system daemon after the app exits and
/// hands it back at the next launch. Here nothing outlives the process: an operation whose
/// configuration ``CKOperation/Configuration/isLongLived`` is listed from when it starts
/// until it finishes, so another part of the app can find it by ID and set its callbacks;
/// after a relaunch the list is empty, which is the truth (nothing from before still runs).
enum LongLivedOperations {
    private static let running = Locked<[CKOperation.ID: (container: String?, operation: CKOperation)]>([:])

    static func started(_ operation: CKOperation, container: String?) {
        running.withLock { $0[operation.operationID] = (container, operation) }
    }

    static func finished(_ operation: CKOperation) {
        running.withLock { $0[operation.operationID] = nil }
    }

    /// The IDs of the long-lived operations running for a container, sorted.
    static func ids(container: String?) -> [CKOperation.ID] {
        running.current.filter { $0.value.container == container }.keys.sorted()
    }

    static func operation(_ id: CKOperation.ID, container: String?) -> CKOperation? {
        running.current[id].flatMap { $0.container == container ? $0.operation : nil }
    }

    /// Whether `operation` is a long-lived operation that runs already (handed back by
    /// ``CKContainer/longLivedOperation(for:)``): adding it to a queue again is a no-op.
    static func isRunning(_ operation: CKOperation) -> Bool {
        running.current[operation.operationID]?.operation === operation
    }
}

extension CKContainer {
    /// The IDs of the long-lived operations of this container running in this process
    /// (none after a relaunch: operations do not outlive the process here).
    public func allLongLivedOperationIDs() async throws -> [CKOperation.ID] {
        LongLivedOperations.ids(container: containerIdentifier)
    }

    public func fetchAllLongLivedOperationIDs(completionHandler: @escaping @Sendable ([CKOperation.ID]?, (any Error)?) -> Void) {
        let ids = LongLivedOperations.ids(container: containerIdentifier)
        Task { completionHandler(ids, nil) }
    }

    /// The long-lived operation with this ID while it runs in this process; `nil` once it
    /// finished (or was never started here). It is the running operation itself: set its
    /// callbacks; ``add(_:)`` of it again does nothing.
    public func longLivedOperation(for operationID: CKOperation.ID) async throws -> CKOperation? {
        LongLivedOperations.operation(operationID, container: containerIdentifier)
    }

    public func fetchLongLivedOperation(
        withID operationID: CKOperation.ID, completionHandler: @escaping @Sendable (CKOperation?, (any Error)?) -> Void
    ) {
        let operation = LongLivedOperations.operation(operationID, container: containerIdentifier)
        Task { completionHandler(operation, nil) }
    }
}
