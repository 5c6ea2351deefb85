import Foundation

/// `NSUbiquitousKeyValueStore`'s typed getters and setters. A getter of a number or Boolean
/// answers 0 or `false` for an absent key, and converts between numbers and Booleans as
/// `NSNumber` does; the others answer `nil` for an absent key or another type.
extension KeyValueStore {
    public func string(forKey key: String) -> String? {
        if case .string(let value)? = object(forKey: key) { value } else { nil }
    }

    public func longLong(forKey key: String) -> Int64 {
        switch object(forKey: key) {
        case .int64(let value)?: value
        case .double(let value)?: value.isFinite ? Int64(exactly: value.rounded(.towardZero)) ?? 0 : 0
        case .bool(let value)?: value ? 1 : 0
        default: 0
        }
    }

    public func double(forKey key: String) -> Double {
        switch object(forKey: key) {
        case .double(let value)?: value
        case .int64(let value)?: Double(value)
        case .bool(let value)?: value ? 1 : 0
        default: 0
        }
    }

    public func bool(forKey key: String) -> Bool {
        switch object(forKey: key) {
        case .bool(let value)?: value
        case .int64(let value)?: value != 0
        case .double(let value)?: value != 0
        default: false
        }
    }

    public func date(forKey key: String) -> Date? {
        if case .date(let value)? = object(forKey: key) { value } else { nil }
    }

    public func data(forKey key: String) -> Data? {
        if case .data(let value)? = object(forKey: key) { value } else { nil }
    }

    public func array(forKey key: String) -> [KeyValue]? {
        if case .array(let value)? = object(forKey: key) { value } else { nil }
    }

    public func dictionary(forKey key: String) -> [String: KeyValue]? {
        if case .dictionary(let value)? = object(forKey: key) { value } else { nil }
    }

    public func set(_ value: String?, forKey key: String) throws { try set(value.map(KeyValue.string), forKey: key) }
    public func set(_ value: Int64, forKey key: String) throws { try set(.int64(value), forKey: key) }
    public func set(_ value: Double, forKey key: String) throws { try set(.double(value), forKey: key) }
    public func set(_ value: Bool, forKey key: String) throws { try set(.bool(value), forKey: key) }
    public func set(_ value: Date?, forKey key: String) throws { try set(value.map(KeyValue.date), forKey: key) }
    public func set(_ value: Data?, forKey key: String) throws { try set(value.map(KeyValue.data), forKey: key) }
    public func set(_ value: [KeyValue]?, forKey key: String) throws { try set(value.map(KeyValue.array), forKey: key) }
    public func set(_ value: [String: KeyValue]?, forKey key: String) throws {
        try set(value.map(KeyValue.dictionary), forKey: key)
    }
}
