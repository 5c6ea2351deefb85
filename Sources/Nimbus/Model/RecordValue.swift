import Foundation
import NimbusProtocol

/// A Swift type that can be stored in a record field: `String`, `Int`, `Int64`, `Double`,
/// `Bool`, `Date`, `Data`, `Location`, `Reference`, `FieldValue` itself, and arrays of
/// the scalar ones.
public protocol RecordValue: Sendable {
    /// Converts a field value; `nil` when it holds another type.
    init?(fieldValue: FieldValue)
    /// The field value to store.
    var fieldValue: FieldValue { get }
}

/// A ``RecordValue`` that can also be an element of a list field (`STRING_LIST`, …).
public protocol RecordListElement: RecordValue {
    /// The element type of the list.
    static var fieldType: FieldType { get }
}

extension FieldValue: RecordValue {
    public init?(fieldValue: FieldValue) { self = fieldValue }
    public var fieldValue: FieldValue { self }
}

extension String: RecordListElement {
    public static var fieldType: FieldType { .string }
    public init?(fieldValue: FieldValue) {
        guard let value = fieldValue.stringValue else { return nil }
        self = value
    }
    public var fieldValue: FieldValue { .string(self) }
}

extension Int64: RecordListElement {
    public static var fieldType: FieldType { .int64 }
    public init?(fieldValue: FieldValue) {
        guard let value = fieldValue.int64Value else { return nil }
        self = value
    }
    public var fieldValue: FieldValue { .int64(self) }
}

extension Int: RecordListElement {
    public static var fieldType: FieldType { .int64 }
    public init?(fieldValue: FieldValue) {
        guard let value = fieldValue.int64Value, let int = Int(exactly: value) else { return nil }
        self = int
    }
    public var fieldValue: FieldValue { .int64(Int64(self)) }
}

/// Stored as INT64 0 or 1, as CloudKit stores booleans.
extension Bool: RecordListElement {
    public static var fieldType: FieldType { .int64 }
    public init?(fieldValue: FieldValue) {
        guard let value = fieldValue.int64Value else { return nil }
        self = value != 0
    }
    public var fieldValue: FieldValue { .int64(self ? 1 : 0) }
}

extension Double: RecordListElement {
    public static var fieldType: FieldType { .double }
    public init?(fieldValue: FieldValue) {
        guard let value = fieldValue.doubleValue else { return nil }
        self = value
    }
    public var fieldValue: FieldValue { .double(self) }
}

/// Stored as TIMESTAMP: milliseconds since the epoch and the fraction of a millisecond they
/// leave out, so that a date reads back exactly as it was saved (``FieldValue/init(date:)``).
extension Date: RecordListElement {
    public static var fieldType: FieldType { .timestamp }
    public init?(fieldValue: FieldValue) {
        guard let date = fieldValue.dateValue else { return nil }
        self = date
    }
    public var fieldValue: FieldValue { FieldValue(date: self) }
}

extension Data: RecordListElement {
    public static var fieldType: FieldType { .bytes }
    public init?(fieldValue: FieldValue) {
        guard let value = fieldValue.bytesValue else { return nil }
        self = value
    }
    public var fieldValue: FieldValue { .bytes(self) }
}

extension Location: RecordListElement {
    public static var fieldType: FieldType { .location }
    public init?(fieldValue: FieldValue) {
        guard let value = fieldValue.locationValue else { return nil }
        self = value
    }
    public var fieldValue: FieldValue { .location(self) }
}

extension Reference: RecordListElement {
    public static var fieldType: FieldType { .reference }
    public init?(fieldValue: FieldValue) {
        guard let value = fieldValue.referenceValue else { return nil }
        self = value
    }
    public var fieldValue: FieldValue { .reference(self) }
}

/// Lists: `[String]` is a STRING_LIST, `[Date]` a TIMESTAMP_LIST, and so on.
extension Array: RecordValue where Element: RecordListElement {
    public init?(fieldValue: FieldValue) {
        guard case .list(_, let elements) = fieldValue else { return nil }
        var result: [Element] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard let value = Element(fieldValue: element) else { return nil }
            result.append(value)
        }
        self = result
    }
    public var fieldValue: FieldValue { .list(elementType: Element.fieldType, map(\.fieldValue)) }
}

extension Date {
    /// The date at a CloudKit timestamp (milliseconds since the epoch).
    init(millisecondsSince1970 millis: Int64) {
        self.init(timeIntervalSince1970: Double(millis) / 1000)
    }

    /// The CloudKit timestamp of this date, rounded to the nearest millisecond (dates beyond
    /// the 64-bit range of milliseconds clamp to it).
    var millisecondsSince1970: Int64 { FieldValue(date: self).timestampValue ?? 0 }
}
