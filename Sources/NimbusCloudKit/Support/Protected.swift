import Nimbus

/// A stored property of an operation behind a lock: CloudKit's operations are configured
/// on one thread and run on another, and their callbacks may be read while they are set.
///
/// The wrapper itself is a constant reference to a ``Locked`` box, so a type whose stored
/// properties are all constants or `@Protected` has no unsynchronized mutable state.
///
/// Public only because public properties use it (Swift requires a property wrapper to be as
/// visible as the properties it wraps); not part of CloudKit's API.
@_documentation(visibility: internal)
@propertyWrapper
public struct Protected<Value: Sendable>: Sendable {
    private let box: Locked<Value>

    public init(wrappedValue: Value) {
        self.box = Locked(wrappedValue)
    }

    public var wrappedValue: Value {
        get { box.current }
        nonmutating set { box.withLock { $0 = newValue } }
    }
}
