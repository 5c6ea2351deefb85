import Foundation

/// Operations that belong together (a sync pass, an app setup): cancelling the group cancels
/// every operation in it, including ones added afterwards, whatever queues they run on.
///
/// ```swift
/// let group = OperationGroup(name: "initial sync")
/// fetchChanges.group = group
/// fetchZoneChanges.group = group
/// …
/// group.cancel()      // the user signed out
/// ```
public final class OperationGroup: Sendable {
    /// References to operations that do not keep them alive. `@unchecked Sendable`:
    /// `Operation` is documented as safe to use from any thread, and the box is only read
    /// and written inside the group's lock.
    private struct WeakOperation: @unchecked Sendable {
        weak var operation: Operation?
    }

    private struct State: Sendable {
        var members: [WeakOperation] = []
        var isCancelled = false
    }

    /// A name for logs and debugging.
    public let name: String?
    private let state = Locked(State())

    public init(name: String? = nil) {
        self.name = name
    }

    /// Adds an operation; it is cancelled at once if the group already is.
    /// (Setting ``DatabaseOperation/group`` calls this.)
    public func add(_ operation: Operation) {
        let cancelled = state.withLock { state -> Bool in
            state.members.removeAll { $0.operation == nil || $0.operation?.isFinished == true }
            if !state.members.contains(where: { $0.operation === operation }) {
                state.members.append(WeakOperation(operation: operation))
            }
            return state.isCancelled
        }
        if cancelled { operation.cancel() }
    }

    /// Cancels every operation of the group, now and later added.
    public func cancel() {
        let members = state.withLock { state -> [WeakOperation] in
            state.isCancelled = true
            return state.members
        }
        for member in members { member.operation?.cancel() }
    }

    public var isCancelled: Bool { state.current.isCancelled }

    /// The group's operations that have not finished.
    public var operations: [Operation] {
        let members = state.current.members
        return members.compactMap(\.operation).filter { !$0.isFinished }
    }
}
