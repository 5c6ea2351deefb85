import Foundation

/// A syntax error in a JSON document, with the byte offset where it was found.
package struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    package var offset: Int
    package var message: String
    package var description: String { "malformed JSON at byte \(offset): \(message)" }
}

extension JSON {
    /// Parses a complete JSON document. Whitespace (pretty-printing) is accepted anywhere
    /// JSON allows it; trailing content is an error.
    package static func parse(_ bytes: some Collection<UInt8>) throws(JSONSyntaxError) -> JSON {
        // Parse the bytes where they are when they are contiguous (arrays, ByteBuffer views).
        let direct = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONSyntaxError) -> JSON in
                var parser = JSONParser(bytes: buffer)
                return try parser.parseDocument()
            }
        }
        if let direct { return try direct.get() }
        return try Array(bytes).withUnsafeBufferPointer { buffer throws(JSONSyntaxError) -> JSON in
            var parser = JSONParser(bytes: buffer)
            return try parser.parseDocument()
        }
    }

    /// Parses a complete JSON document from a string.
    package static func parse(_ text: String) throws(JSONSyntaxError) -> JSON {
        try parse(Array(text.utf8))
    }
}

/// A recursive-descent parser over the document's bytes (valid only during ``JSON/parse(_:)``
/// or ``ChangeFeedPage/parse(_:)``).
struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0
    /// Members of the objects being parsed (see ``parseObject()``).
    var memberStack: [(key: String, value: JSON)] = []
    /// Elements of the arrays being parsed (see ``parseArray()``).
    var elementStack: [JSON] = []
    /// The last stamps' user and device names of a change feed page (see
    /// `parseRepeatingString(into:previous:)`).
    var previousStampUser: String?
    var previousStampDevice: String?
    static let maxDepth = 256

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func parseDocument() throws(JSONSyntaxError) -> JSON {
        // Tolerate a UTF-8 byte order mark.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        guard index < bytes.count else { throw fail("the body is empty") }
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected content after the document") }
        return value
    }

    func fail(_ message: String) -> JSONSyntaxError { JSONSyntaxError(offset: index, message: message) }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONSyntaxError) -> JSON {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character '\(Character(UnicodeScalar(bytes[index])))'")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        let matches = literal.withUTF8Buffer { buffer in
            (0..<count).allSatisfy { bytes[index + $0] == buffer[$0] }
        }
        guard matches else { throw fail("invalid literal") }
        index += count
    }

    mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        if depth > Self.maxDepth { throw fail("nesting deeper than \(Self.maxDepth) levels") }
    }

    mutating func parseObject() throws(JSONSyntaxError) -> JSON {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        // Members are collected on a stack shared by all nesting levels and moved into a
        // dictionary of the right capacity at the end (no rehashing while it grows). Later
        // duplicates replace earlier ones, as with direct insertion.
        let base = memberStack.count
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw fail("expected a quoted member name")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            memberStack.append((key, value))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                var members = [String: JSON](minimumCapacity: memberStack.count - base)
                // Move the members out (no retain/release per value); the vacated slots get
                // trivial values for `removeSubrange` to drop.
                memberStack.withUnsafeMutableBufferPointer { stack in
                    let start = stack.baseAddress!
                    for position in base..<stack.count {
                        let member = (start + position).move()
                        (start + position).initialize(to: (key: "", value: .null))
                        members[member.key] = member.value
                    }
                }
                memberStack.removeSubrange(base...)
                return .object(members)
            }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func parseArray() throws(JSONSyntaxError) -> JSON {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array([])
        }
        // Elements are collected on a shared stack and copied out once, at their final size.
        let base = elementStack.count
        while true {
            skipWhitespace()
            let element = try parseValue()
            elementStack.append(element)
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input in an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                let count = elementStack.count - base
                let elements = [JSON](unsafeUninitializedCapacity: count) { output, initialized in
                    elementStack.withUnsafeMutableBufferPointer { stack in
                        let start = stack.baseAddress! + base
                        for offset in 0..<count {
                            (output.baseAddress! + offset).initialize(to: (start + offset).move())
                            (start + offset).initialize(to: .null)
                        }
                    }
                    initialized = count
                }
                elementStack.removeSubrange(base...)
                return .array(elements)
            }
            throw fail("expected ',' or ']'")
        }
    }

    mutating func parseNumber() throws(JSONSyntaxError) -> JSON {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits(_ parser: inout JSONParser) -> Int {
            var count = 0
            while parser.index < parser.bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index])
            {
                parser.index += 1
                count += 1
            }
            return count
        }
        guard digits(&self) > 0 else { throw fail("invalid number") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw fail("invalid number: digits expected after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits(&self) > 0 else { throw fail("invalid number: digits expected in the exponent") }
        }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
    }

    /// Short strings seen in this document, by their bytes: member names and type names
    /// repeat in every record, and reusing the string skips UTF-8 validation.
    var shortStrings = ShortStringTable()

    mutating func makeString(_ range: Range<Int>) -> String {
        let text = UnsafeBufferPointer(rebasing: bytes[range])
        if let (key, slot) = ShortStringTable.key(text) {
            if let cached = shortStrings.lookUp(key, slot) { return cached }
            let string = String(decoding: text, as: UTF8.self)
            shortStrings.store(string, key, slot)
            return string
        }
        return String(decoding: text, as: UTF8.self)
    }

    mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1  // opening quote
        let start = index
        // Bytes above 0x7F seen: the string is checked to be valid UTF-8 before it is made,
        // so a malformed sequence is refused, never repaired into U+FFFD.
        var nonASCII = false
        // Fast path: no escapes.
        while index < bytes.count {
            index = JSONPlainBytes.end(of: bytes, from: index, nonASCIIIsPlain: false)
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                if nonASCII { try validateUTF8(start..<index) }
                let text = makeString(start..<index)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("control character in a string") }
            if byte >= 0x80 { nonASCII = true }
            index += 1
        }
        var scratch = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                // Escapes are ASCII and decode to whole sequences: checking the document's
                // bytes of the string checks the decoded string.
                if nonASCII { try validateUTF8(start..<index) }
                index += 1
                return String(decoding: scratch, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unterminated escape") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): scratch.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): scratch.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): scratch.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): scratch.append(0x08)
                case UInt8(ascii: "f"): scratch.append(0x0C)
                case UInt8(ascii: "n"): scratch.append(0x0A)
                case UInt8(ascii: "r"): scratch.append(0x0D)
                case UInt8(ascii: "t"): scratch.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw fail("unpaired surrogate") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("invalid surrogate pair") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("unpaired surrogate")
                    }
                    guard let unicode = UnicodeScalar(scalar) else { throw fail("invalid unicode escape") }
                    scratch.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    throw fail("invalid escape")
                }
            default:
                if byte < 0x20 { throw fail("control character in a string") }
                if byte >= 0x80 { nonASCII = true }
                scratch.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    /// Throws at the first byte of `range` that does not begin a well-formed UTF-8 sequence
    /// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
    func validateUTF8(_ range: Range<Int>) throws(JSONSyntaxError) {
        if let offset = UTF8Validation.firstInvalidByte(in: bytes, range) {
            throw JSONSyntaxError(offset: offset, message: "invalid UTF-8 in a string")
        }
    }

    mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("truncated unicode escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid hex digit in a unicode escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}

/// A small direct-mapped cache of strings of 1 to 16 bytes, keyed by their bytes.
struct ShortStringTable {
    struct Key: Equatable {
        var low: UInt64
        var high: UInt64
        var count: Int
    }

    private static let size = 256
    private var keys: [Key]
    private var strings: [String]

    init() {
        keys = []
        strings = []
    }

    /// The key and slot of a short byte string, or `nil` if it is empty or longer than 16 bytes.
    static func key(_ bytes: UnsafeBufferPointer<UInt8>) -> (Key, Int)? {
        let count = bytes.count
        guard count > 0, count <= 16 else { return nil }
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { raw in
            raw.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: count)
        }
        let key = Key(low: words.0, high: words.1, count: count)
        var hash = words.0 &* 0x9E37_79B9_7F4A_7C15
        hash ^= (words.1 ^ UInt64(count)) &* 0xC2B2_AE3D_27D4_EB4F
        return (key, Int(truncatingIfNeeded: hash >> 56))
    }

    func lookUp(_ key: Key, _ slot: Int) -> String? {
        guard !keys.isEmpty, keys[slot] == key else { return nil }
        return strings[slot]
    }

    mutating func store(_ string: String, _ key: Key, _ slot: Int) {
        if keys.isEmpty {
            keys = Array(repeating: Key(low: 0, high: 0, count: 0), count: Self.size)
            strings = Array(repeating: "", count: Self.size)
        }
        keys[slot] = key
        strings[slot] = string
    }
}

/// Checks UTF-8 by the well-formed byte sequences of the Unicode standard (table 3-7): no
/// overlong forms, no surrogates, nothing above U+10FFFF. Shared with `nimbus bench`'s page scanner.
package enum UTF8Validation {
    /// The offset of the first byte in `range` that does not start a well-formed sequence
    /// (or starts one cut short), or `nil` when all of it is valid UTF-8.
    static func firstInvalidByte(in bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
        var position = range.lowerBound
        while position < range.upperBound {
            if bytes[position] < 0x80 {
                position += 1
                continue
            }
            guard let length = sequenceLength(at: position, in: bytes, end: range.upperBound) else { return position }
            position += length
        }
        return nil
    }

    /// The length of the well-formed multi-byte sequence whose lead byte (0x80 or above) is at
    /// `position`, ending before `end`; `nil` if the bytes there are not one.
    package static func sequenceLength(at position: Int, in bytes: UnsafeBufferPointer<UInt8>, end: Int) -> Int? {
        let length: Int
        var second: ClosedRange<UInt8> = 0x80...0xBF
        switch bytes[position] {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; second = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; second = 0x80...0x9F
        case 0xF0: length = 4; second = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; second = 0x80...0x8F
        default: return nil
        }
        guard end - position >= length, second.contains(bytes[position + 1]) else { return nil }
        for offset in 2..<length where bytes[position + offset] & 0xC0 != 0x80 { return nil }
        return length
    }
}
