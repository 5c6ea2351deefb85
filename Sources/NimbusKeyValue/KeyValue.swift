import Foundation

/// A value of the key-value store: what `NSUbiquitousKeyValueStore` holds (strings, numbers,
/// Booleans, dates, data, and arrays and dictionaries of them), as a Swift value.
///
/// ```swift
/// store.set(.string("dark"), forKey: "theme")
/// store.set(.array([.string("swift"), .int64(6)]), forKey: "recent")
/// if case .dictionary(let window)? = store.object(forKey: "window") { … }
/// ```
public enum KeyValue: Sendable, Hashable {
    case string(String)
    case int64(Int64)
    case double(Double)
    case bool(Bool)
    case date(Date)
    case data(Data)
    case array([KeyValue])
    case dictionary([String: KeyValue])
}

extension KeyValue: Codable {
    /// One tag per case, so a value reads back as the case it was written as (a `Bool` is never
    /// mistaken for an integer, nor a date for a number).
    private enum Tag: String, CodingKey {
        case string = "s", int64 = "i", double = "d", bool = "b", date = "t", data = "x", array = "a", dictionary = "m"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Tag.self)
        guard container.allKeys.count == 1, let tag = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "a value has exactly one type tag"))
        }
        switch tag {
        case .string: self = .string(try container.decode(String.self, forKey: tag))
        case .int64: self = .int64(try container.decode(Int64.self, forKey: tag))
        case .double: self = .double(try container.decode(Double.self, forKey: tag))
        case .bool: self = .bool(try container.decode(Bool.self, forKey: tag))
        case .date: self = .date(Date(timeIntervalSince1970: Double(try container.decode(Int64.self, forKey: tag)) / 1000))
        case .data: self = .data(try container.decode(Data.self, forKey: tag))
        case .array: self = .array(try container.decode([KeyValue].self, forKey: tag))
        case .dictionary: self = .dictionary(try container.decode([String: KeyValue].self, forKey: tag))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Tag.self)
        switch self {
        case .string(let value): try container.encode(value, forKey: .string)
        case .int64(let value): try container.encode(value, forKey: .int64)
        case .double(let value): try container.encode(value, forKey: .double)
        case .bool(let value): try container.encode(value, forKey: .bool)
        case .date(let value): try container.encode(Int64((value.timeIntervalSince1970 * 1000).rounded()), forKey: .date)
        case .data(let value): try container.encode(value, forKey: .data)
        case .array(let value): try container.encode(value, forKey: .array)
        case .dictionary(let value): try container.encode(value, forKey: .dictionary)
        }
    }
}

/// How a value travels in its record's `value` field: tagged JSON, the same bytes on every
/// device (keys sorted), so its size (what the limits count) is the same everywhere.
enum KeyValueCoding {
    static func encode(_ value: KeyValue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decode(_ text: String) throws -> KeyValue {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return try decoder.decode(KeyValue.self, from: Data(text.utf8))
    }
}
