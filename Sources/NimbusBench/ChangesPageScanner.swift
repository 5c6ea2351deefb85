import NIOCore
import NimbusProtocol

/// Reads a `records/changes` answer in one pass without building a JSON tree.
///
/// The bench's fetch runs measure the server's change feed, but their client shares the
/// machine's cores with it: decoding every page into a tree of dictionaries cost the bench
/// client more CPU per record than the server spent answering. The scanner still checks the
/// whole answer — it is well-formed JSON (RFC 8259: structure, escapes, UTF-8, numbers,
/// literals), every record has a string `recordName` and an object `fields` — and takes the
/// top-level `syncToken` and `moreComing`; it allocates only the names it returns.
struct ChangesPageScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Checks and reads one `records/changes` answer.
    static func scan(_ buffer: ByteBuffer) throws -> BenchClient.ChangesPage {
        try read(buffer, names: true)
    }

    /// Checks one `records/changes` answer and reads only its `syncToken` and `moreComing`
    /// (the records are checked, not read).
    static func skim(_ buffer: ByteBuffer) throws -> (syncToken: String, moreComing: Bool) {
        let page = try read(buffer, names: false)
        return (page.syncToken, page.moreComing)
    }

    private static func read(_ buffer: ByteBuffer, names: Bool) throws -> BenchClient.ChangesPage {
        let result = buffer.readableBytesView.withContiguousStorageIfAvailable { bytes in
            var scanner = ChangesPageScanner(bytes)
            return Result { try scanner.page(readingNames: names) }
        }
        guard let result else { throw BenchError("records/changes: the answer is not contiguous") }
        return try result.get()
    }

    private mutating func page(readingNames: Bool) throws -> BenchClient.ChangesPage {
        var names: [String]?
        var syncToken: String?
        var moreComing: Bool?
        try expect(UInt8(ascii: "{"))
        try members { scanner, key in
            switch key {
            case "records" where readingNames: names = try scanner.records()
            case "records":
                scanner.skipWhitespace()
                guard try scanner.peek() == UInt8(ascii: "[") else { throw scanner.failure("records is not an array") }
                try scanner.skipValue()
                names = []
            case "syncToken": syncToken = try scanner.string()
            case "moreComing": moreComing = try scanner.bool()
            default: try scanner.skipValue()
            }
        }
        skipWhitespace()
        guard index == bytes.count else { throw failure("text after the answer") }
        guard let names, let syncToken, let moreComing else {
            throw failure("records, syncToken or moreComing missing")
        }
        return BenchClient.ChangesPage(recordNames: names, syncToken: syncToken, moreComing: moreComing)
    }

    private mutating func records() throws -> [String] {
        var names: [String] = []
        names.reserveCapacity(200)
        try expect(UInt8(ascii: "["))
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            index += 1
            return names
        }
        while true {
            names.append(try record())
            skipWhitespace()
            let next = try take()
            if next == UInt8(ascii: "]") { return names }
            guard next == UInt8(ascii: ",") else { throw failure("expected , or ] in records") }
        }
    }

    private mutating func record() throws -> String {
        var name: String?
        var hasFields = false
        try expect(UInt8(ascii: "{"))
        try members { scanner, key in
            switch key {
            case "recordName": name = try scanner.string()
            case "fields":
                scanner.skipWhitespace()
                hasFields = try scanner.peek() == UInt8(ascii: "{")
                try scanner.skipValue()
            default: try scanner.skipValue()
            }
        }
        guard let name, hasFields else { throw failure("a record without recordName or fields") }
        return name
    }

    /// Reads an object's members after its `{`, handing each key to `body` positioned at the value.
    private mutating func members(_ body: (inout ChangesPageScanner, String) throws -> Void) throws {
        skipWhitespace()
        if try peek() == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            let key = try string()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            try body(&self, key)
            skipWhitespace()
            let next = try take()
            if next == UInt8(ascii: "}") { return }
            guard next == UInt8(ascii: ",") else { throw failure("expected , or } in an object") }
        }
    }

    // MARK: Values

    private mutating func skipValue() throws {
        skipWhitespace()
        switch try peek() {
        case UInt8(ascii: "\""):
            _ = try skipString()
        case UInt8(ascii: "{"):
            index += 1
            try nested { scanner in
                scanner.skipWhitespace()
                if try scanner.peek() == UInt8(ascii: "}") {
                    scanner.index += 1
                    return
                }
                while true {
                    scanner.skipWhitespace()
                    _ = try scanner.skipString()
                    try scanner.expect(UInt8(ascii: ":"))
                    try scanner.skipValue()
                    scanner.skipWhitespace()
                    let next = try scanner.take()
                    if next == UInt8(ascii: "}") { return }
                    guard next == UInt8(ascii: ",") else { throw scanner.failure("expected , or } in an object") }
                }
            }
        case UInt8(ascii: "["):
            index += 1
            try nested { scanner in
                scanner.skipWhitespace()
                if try scanner.peek() == UInt8(ascii: "]") {
                    scanner.index += 1
                    return
                }
                while true {
                    try scanner.skipValue()
                    scanner.skipWhitespace()
                    let next = try scanner.take()
                    if next == UInt8(ascii: "]") { return }
                    guard next == UInt8(ascii: ",") else { throw scanner.failure("expected , or ] in an array") }
                }
            }
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: try number()
        }
    }

    private mutating func nested(_ body: (inout ChangesPageScanner) throws -> Void) throws {
        depth += 1
        guard depth <= 512 else { throw failure("nested too deeply") }
        try body(&self)
        depth -= 1
    }

    private mutating func bool() throws -> Bool {
        skipWhitespace()
        if try peek() == UInt8(ascii: "t") {
            try literal("true")
            return true
        }
        try literal("false")
        return false
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw failure("truncated literal") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw failure("expected \(word)")
        }
        index += count
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() throws {
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let first = try take()
        if first == UInt8(ascii: "0") {
            // no further integer digits
        } else if isDigit(first) {
            digits()
        } else {
            throw failure("expected a value")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard isDigit(try take()) else { throw failure("expected a digit after .") }
            digits()
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard isDigit(try take()) else { throw failure("expected an exponent") }
            digits()
        }
    }

    private mutating func digits() {
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    // MARK: Strings

    /// A string value, decoded.
    private mutating func string() throws -> String {
        let start = index
        let escaped = try skipString()
        let content = UnsafeBufferPointer(rebasing: bytes[(start + 1)..<(index - 1)])
        if !escaped { return String(decoding: content, as: UTF8.self) }
        guard let text = (try? JSON.parse(UnsafeBufferPointer(rebasing: bytes[start..<index])))?.string else {
            throw failure("a string that does not decode")
        }
        return text
    }

    /// Checks a string from its opening quote to past its closing quote; says whether it
    /// has escapes.
    private mutating func skipString() throws -> Bool {
        guard try take() == UInt8(ascii: "\"") else { throw failure("expected a string") }
        var escaped = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return escaped
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
                try escape()
            } else if byte < 0x20 {
                throw failure("a control character in a string")
            } else if byte < 0x80 {
                index += 1
            } else {
                try utf8Sequence()
            }
        }
        throw failure("unterminated string")
    }

    private mutating func escape() throws {
        index += 1
        switch try take() {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return
        case UInt8(ascii: "u"):
            for _ in 0..<4 {
                let hex = try take()
                guard isDigit(hex) || (hex | 0x20 >= UInt8(ascii: "a") && hex | 0x20 <= UInt8(ascii: "f")) else {
                    throw failure("a bad \\u escape")
                }
            }
        default:
            throw failure("a bad escape")
        }
    }

    /// One multi-byte UTF-8 sequence (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF).
    private mutating func utf8Sequence() throws {
        guard let length = UTF8Validation.sequenceLength(at: index, in: bytes, end: bytes.count) else {
            throw failure(bytes.count - index < 4 ? "invalid or truncated UTF-8" : "invalid UTF-8")
        }
        index += length
    }

    // MARK: Bytes

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private func peek() throws -> UInt8 {
        guard index < bytes.count else { throw failure("truncated answer") }
        return bytes[index]
    }

    private mutating func take() throws -> UInt8 {
        let byte = try peek()
        index += 1
        return byte
    }

    private mutating func expect(_ byte: UInt8) throws {
        skipWhitespace()
        guard try take() == byte else { throw failure("expected \(Character(Unicode.Scalar(byte)))") }
    }

    private func failure(_ what: String) -> BenchError {
        let shown = String(decoding: bytes.prefix(300), as: UTF8.self)
        return BenchError("records/changes answer is not what a client can read (\(what) at byte \(index)): \(shown)")
    }
}
