import Foundation

/// A value that is only ever read or written while holding a lock.
///
/// `@unchecked Sendable` is sound here: `value` is private and every access goes through
/// ``withLock(_:)``, which holds `lock` for the whole access, so no two threads ever touch
/// `value` at the same time; and `Value` is itself `Sendable`, so what leaves the lock may
/// cross threads.
///
/// `package`: NimbusCloudKit keeps its reference types' state in it too.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// A copy of the current value.
    package var current: Value { withLock { $0 } }
}
