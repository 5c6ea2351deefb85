/// A stored property whose every read and write takes a lock: the configuration and
/// callbacks of operations, which any thread may touch.
///
/// Public only because public properties of the operation classes use it.
@_documentation(visibility: internal)
@propertyWrapper
public struct Guarded<Value: Sendable>: Sendable {
    private let storage: Locked<Value>

    public init(wrappedValue: Value) {
        storage = Locked(wrappedValue)
    }

    public var wrappedValue: Value {
        get { storage.current }
        nonmutating set { storage.withLock { $0 = newValue } }
    }
}
