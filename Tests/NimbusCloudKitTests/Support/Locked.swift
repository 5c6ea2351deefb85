import Foundation

/// A value set from a callback thread and read by the test.
final class Locked<Value: Sendable>: Sendable {
    private let lock = NSLock()
    // `nonisolated(unsafe)`: `value` is read and written only while `lock` is held.
    nonisolated(unsafe) private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func set(_ newValue: Value) {
        lock.lock()
        value = newValue
        lock.unlock()
    }

    /// Changes the value in place, under the lock.
    func update(_ change: (inout Value) -> Void) {
        lock.lock()
        change(&value)
        lock.unlock()
    }

    func get() -> Value {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
