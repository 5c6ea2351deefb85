import Foundation

/// Runs operations one after another in the order they are added, each starting only when
/// the previous one has finished, on whatever queues they are added to.
///
/// The order comes from dependencies, not from a queue's `maxConcurrentOperationCount = 1`:
/// with a "serial" queue, an operation held back by some other dependency lets the next one
/// jump ahead of it. With a chain it cannot, and queues can stay concurrent.
///
/// ```swift
/// let chain = SerialOperationChain(stopsOnFailure: true)
/// chain.add(createZones, to: queue)
/// chain.add(createSubscriptions, to: queue)      // runs only after createZones finished
/// chain.add(fetchChanges, to: otherQueue)        // and this after that, on another queue
/// ```
public final class SerialOperationChain: Sendable {
    /// The last operation added. `@unchecked Sendable`: `Operation` is documented as safe to
    /// use from any thread, and the box is only touched inside the chain's lock.
    private struct Last: @unchecked Sendable {
        var operation: Operation?
    }

    private let last = Locked(Last())
    /// Whether a ``DatabaseOperation`` whose predecessor failed is skipped (finishing with
    /// ``NimbusError/Code/batchRequestFailed``), and so every one after it.
    public let stopsOnFailure: Bool

    public init(stopsOnFailure: Bool = false) {
        self.stopsOnFailure = stopsOnFailure
    }

    /// Makes `operation` depend on the previously added one and adds it to `queue`.
    public func add(_ operation: Operation, to queue: OperationQueue) {
        append(operation)
        queue.addOperation(operation)
    }

    /// Adds operations in order.
    public func add(_ operations: [Operation], to queue: OperationQueue) {
        for operation in operations { add(operation, to: queue) }
    }

    /// Makes `operation` depend on the previously added one without enqueueing it (start it
    /// or add it to a queue yourself).
    public func append(_ operation: Operation) {
        let previous = last.withLock { last -> Operation? in
            defer { last.operation = operation }
            return last.operation
        }
        if let previous { operation.addDependency(previous) }
        if stopsOnFailure, let databaseOperation = operation as? DatabaseOperation {
            databaseOperation.cancelsWhenDependencyFails = true
        }
    }
}
