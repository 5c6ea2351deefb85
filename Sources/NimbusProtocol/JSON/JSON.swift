import Foundation

/// A JSON value as it travels on the wire.
///
/// Nimbus parses and writes CloudKit Web Services bodies with its own small codec rather
/// than `JSONSerialization` so that:
/// - 64-bit integers keep their full range (numbers keep their source text until asked),
/// - errors name the path of the offending value (`operations[3].record.fields.count`),
/// - stored, already-encoded fragments can be spliced into responses without re-encoding
///   (``raw(_:)``, ``rawUTF8(_:)``), which keeps change-feed reads cheap.
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number, kept as its JSON text so that no precision is lost before a type is known.
    case number(String)
    case string(String)
    case array([JSON])
    case object([String: JSON])
    /// A fragment that is already valid JSON text; written verbatim. Never produced by the parser.
    case raw(String)
    /// ``raw(_:)`` as UTF-8 bytes that are known to be valid (read from storage that
    /// guarantees it), so that they are never validated again on their way out.
    case rawUTF8([UInt8])

    /// The members of an object, or `nil`.
    public var object: [String: JSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements of an array, or `nil`.
    public var array: [JSON]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The string, or `nil`.
    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean, or `nil`. Accepts `0`/`1` as some clients send them.
    public var bool: Bool? {
        switch self {
        case .bool(let value): return value
        case .number(let text) where text == "0" || text == "1": return text == "1"
        default: return nil
        }
    }

    /// The value as an exact 64-bit integer: a JSON integer or a string of one.
    public var int64: Int64? {
        switch self {
        case .number(let text): return Int64(text) ?? Double(text).flatMap(JSON.exactInt64)
        case .string(let text): return Int64(text)
        default: return nil
        }
    }

    /// The value as a double: any JSON number or a string of one.
    public var double: Double? {
        switch self {
        case .number(let text): return Double(text)
        case .string(let text): return Double(text)
        default: return nil
        }
    }

    public subscript(key: String) -> JSON? {
        object?[key]
    }

    /// A short name for the kind of value, used in error reasons.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        case .raw, .rawUTF8: return "a value"
        }
    }

    private static func exactInt64(_ value: Double) -> Int64? {
        guard value.rounded() == value, abs(value) < 9.2e18 else { return nil }
        return Int64(value)
    }
}

extension JSON {
    /// A JSON number for an integer.
    public static func int(_ value: Int64) -> JSON { .number(String(value)) }
    /// A JSON number for an integer.
    public static func int(_ value: Int) -> JSON { .number(String(value)) }
    /// A JSON number for a double. JSON has no NaN or infinity: a non-finite value becomes the
    /// string `"NaN"`, `"Infinity"` or `"-Infinity"` (never `null`, which reads as "no value"),
    /// which a reader of a number refuses with a clear error instead of taking it for absent.
    public static func double(_ value: Double) -> JSON {
        guard value.isFinite else { return .string(nonFiniteText(value)) }
        if value.rounded() == value, abs(value) < 1e15 { return .number(String(Int64(value))) }
        return .number("\(value)")
    }
}

extension JSON {
    /// `NaN`, `Infinity` or `-Infinity`: how a non-finite double is spelled on the wire.
    public static func nonFiniteText(_ value: Double) -> String {
        value.isNaN ? "NaN" : value < 0 ? "-Infinity" : "Infinity"
    }

    /// The text of a number or of a string, for error reasons.
    var numberText: String? {
        switch self {
        case .number(let text): return text
        case .string(let text): return "\"\(text.prefix(40))\""
        default: return nil
        }
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(String(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}
