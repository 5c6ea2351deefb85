import Foundation
import NimbusProtocol

/// A value that can stand for a `%@`, `%d`, `%f` or `%K` specifier in a predicate format
/// string: the argument types a CloudKit query accepts.
///
/// `String`, `Int`, `Int64`, `Double`, `Bool` (stored as 0 or 1, as CloudKit stores booleans),
/// `Date`, `Data`, ``Location``, ``Reference``, a ``Record`` or a ``Record/ID`` (both compared
/// as references), ``FieldValue``, and arrays of these (for `IN`, `BETWEEN` and lists).
public protocol PredicateArgument: Sendable {
    /// The value the argument stands for.
    var predicateValue: FieldValue { get }
}

extension String: PredicateArgument {
    public var predicateValue: FieldValue { .string(self) }
}

extension Int: PredicateArgument {
    public var predicateValue: FieldValue { .int64(Int64(self)) }
}

extension Int64: PredicateArgument {
    public var predicateValue: FieldValue { .int64(self) }
}

extension Double: PredicateArgument {
    public var predicateValue: FieldValue { .double(self) }
}

extension Bool: PredicateArgument {
    public var predicateValue: FieldValue { .int64(self ? 1 : 0) }
}

extension Date: PredicateArgument {
    /// The exact date (``FieldValue/init(date:)``): a comparison with a saved date is exact.
    public var predicateValue: FieldValue { FieldValue(date: self) }
}

extension Data: PredicateArgument {
    public var predicateValue: FieldValue { .bytes(self) }
}

extension Location: PredicateArgument {
    public var predicateValue: FieldValue { .location(self) }
}

extension Reference: PredicateArgument {
    public var predicateValue: FieldValue { .reference(self) }
}

extension FieldValue: PredicateArgument {
    public var predicateValue: FieldValue { self }
}

/// A record stands for a reference to it, as a `CKRecord` argument does in CloudKit.
extension Record: PredicateArgument {
    public var predicateValue: FieldValue { .reference(Reference(record: self)) }
}

/// A record ID stands for a reference to its record.
extension Record.ID: PredicateArgument {
    public var predicateValue: FieldValue { .reference(Reference(recordID: self)) }
}

/// An array is a list; its element type is its first element's (STRING when empty).
extension Array: PredicateArgument where Element: PredicateArgument {
    public var predicateValue: FieldValue {
        let values = map(\.predicateValue)
        return .list(elementType: values.first?.type ?? .string, values)
    }
}
