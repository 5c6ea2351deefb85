import Foundation
import NimbusProtocol
import Testing

/// Fuzzes the JSON parser, which reads every request body from the network: whatever the
/// bytes, it must answer with a ``JSONSyntaxError`` or a value that survives a faithful
/// round trip (parse → serialize → parse gives the same value), never a trap. Seeded, so a
/// failure names an input that reproduces.
@Suite("JSON parser fuzzing")
struct JSONFuzzTests {
    /// Parses `bytes`; when that succeeds, checks the round trip and returns the value.
    @discardableResult
    static func checkParse(_ bytes: [UInt8], _ comment: @autoclosure () -> String = "") -> JSON? {
        guard let value = try? JSON.parse(bytes) else { return nil }
        let text = value.serialized()
        let again = try? JSON.parse(text)
        #expect(again == value, "round trip changed the value of \(Self.show(bytes)) \(comment())")
        // Serializing is deterministic, so the second text is the first.
        #expect(again?.serialized() == text)
        return value
    }

    static func show(_ bytes: [UInt8]) -> String {
        bytes.count <= 200 ? String(reflecting: String(decoding: bytes, as: UTF8.self)) + " \(bytes)" : "\(bytes.count) bytes"
    }

    @Test("random bytes: an error or a faithful round trip")
    func randomBytes() {
        var random = SplitMix64(seed: 0x4A53_4F4E)
        // Mostly JSON's own alphabet (so that documents parse often), some of every byte.
        let alphabet = Array("{}[]\":,0123456789-+.eEtrufalsn \\/bfnrtu\n\t".utf8)
        var parsed = 0
        for _ in 0..<4_000 {
            let length = random.int(0..<48)
            let bytes = (0..<length).map { _ in
                random.chance(0.85) ? alphabet[random.int(0..<alphabet.count)] : UInt8.random(in: 0...255, using: &random)
            }
            if Self.checkParse(bytes) != nil { parsed += 1 }
        }
        #expect(parsed > 5, "the generator should make some valid documents too (made \(parsed))")
    }

    @Test("generated documents round trip exactly")
    func generatedDocumentsRoundTrip() throws {
        var random = SplitMix64(seed: 0x5254)
        for _ in 0..<1_500 {
            let value = random.jsonValue(depth: 4)
            let text = value.serialized()
            #expect(try JSON.parse(text) == value, "\(text)")
            // Pretty-printed input (whitespace anywhere JSON allows it) reads the same.
            #expect(try JSON.parse(Self.spaced(text, &random)) == value, "\(text)")
        }
    }

    @Test("mutated valid documents: an error or a faithful round trip")
    func mutatedDocuments() {
        var random = SplitMix64(seed: 0x4D55_5441)
        var parsed = 0
        for round in 0..<3_000 {
            var bytes = Array(random.jsonValue(depth: 3).serialized().utf8)
            for _ in 0..<random.int(1..<4) { random.mutate(&bytes) }
            if Self.checkParse(bytes, "(round \(round))") != nil { parsed += 1 }
        }
        #expect(parsed > 100, "some mutations should stay valid (\(parsed))")
    }

    @Test("every prefix of a document is an error, never a trap")
    func truncatedDocuments() {
        let documents = [
            #"{"a":"\u00e9\ud83d\ude00","b":[1,-2.5e+10,true,false,null],"c":{"d":"\\\"\/\b\f\n\r\t"}}"#,
            #"["\u12", "\ud83d\ude0", "\ud83d\u", "\ud83d\", "\"]"#,
            "\u{FEFF}{\"\u{00E9}\": \"\u{1F600}\"}",
        ]
        for document in documents {
            let bytes = Array(document.utf8)
            for end in 0...bytes.count {
                Self.checkParse(Array(bytes[..<end]))
            }
        }
    }

    @Test(
        "truncated and broken escapes are errors",
        arguments: [
            #""\u""#, #""\u1""#, #""\u12""#, #""\u123""#, #""\u12G4""#, #""\ud83d""#, #""\ud83d\""#, #""\ud83d\u""#,
            #""\ud83d\ude0""#, #""\ud83d\u0041""#, #""\ude00""#, #""\ud83d\n""#, #""\x41""#, #""\"#, #""\u"#,
        ])
    func brokenEscapes(_ text: String) {
        #expect(throws: JSONSyntaxError.self) { try JSON.parse(text) }
    }

    @Test("nesting: 256 levels parse, deeper is an error, in any mix of arrays and objects")
    func deepNesting() throws {
        var random = SplitMix64(seed: 0x4445_4550)
        for depth in [1, 2, 255, 256, 257, 1_000, 50_000] {
            var open: [UInt8] = []
            var close: [UInt8] = []
            for _ in 0..<depth {
                if random.chance(0.5) {
                    open.append(UInt8(ascii: "["))
                    close.append(UInt8(ascii: "]"))
                } else {
                    open.append(contentsOf: Array(#"{"k":"#.utf8))
                    close.append(UInt8(ascii: "}"))
                }
            }
            let bytes = open + Array("0".utf8) + close.reversed()
            if depth <= 256 {
                #expect(Self.checkParse(bytes) != nil, "depth \(depth)")
            } else {
                #expect(throws: JSONSyntaxError.self, "depth \(depth)") { try JSON.parse(bytes) }
            }
            // Unclosed nesting is an error at every depth.
            #expect(throws: JSONSyntaxError.self) { try JSON.parse(open) }
        }
    }

    @Test("huge and odd numbers keep their text; conversions answer nil or a value, never trap")
    func hugeNumbers() throws {
        var random = SplitMix64(seed: 0x4E55_4D)
        var texts = [
            "1e309", "-1e309", "1e400", "1E-400", "-0", "0.0", "9223372036854775807", "9223372036854775808",
            "-9223372036854775808", "-9223372036854775809", "18446744073709551616", "1e18", "9.2e18", "9.3e18",
            "-9.3e18", "123456789012345678901234567890", "0.000000000000000000000000000001", "1e+9999999999",
            "1e-9999999999", String(repeating: "9", count: 5_000), "-" + String(repeating: "1", count: 400) + ".5e-7",
        ]
        for _ in 0..<1_000 {
            var text = random.chance(0.3) ? "-" : ""
            text += String(random.int(1...9)) + String((0..<random.int(0..<40)).map { _ in Character(String(random.int(0...9))) })
            if random.chance(0.4) { text += "." + String(random.int(0...999_999)) }
            if random.chance(0.6) { text += ["e", "E", "e+", "e-"][random.int(0..<4)] + String(random.int(0...99_999)) }
            texts.append(text)
        }
        for text in texts {
            let value = try JSON.parse(text)
            #expect(value == .number(text))
            #expect(value.serialized() == text)
            _ = value.int64
            _ = value.double
            _ = value.bool
            _ = JSON.string(text).int64
            _ = JSON.string(text).double
            // As a member of a body, the number decodes as a field value or fails with BAD_REQUEST.
            for type in ["INT64", "DOUBLE", "TIMESTAMP", "STRING", "INT64_LIST", "DOUBLE_LIST"] {
                _ = try? FieldValue(wire: WireReader(try JSON.parse(#"{"value":\#(text),"type":"\#(type)"}"#)))
            }
            _ = try? FieldValue(wire: WireReader(value))
        }
    }

    @Test("broken UTF-8 inside strings: an error or a stable round trip")
    func brokenUTF8() {
        var random = SplitMix64(seed: 0x5554_4638)
        let broken: [[UInt8]] = [
            [0xFF], [0xC0, 0x80], [0xC3], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xF0, 0x9F, 0x98], [0x80], [0xBF, 0xBF], [0xF8, 0x88, 0x80, 0x80, 0x80], [0xC3, 0x28],
        ]
        for _ in 0..<2_000 {
            var inner: [UInt8] = []
            for _ in 0..<random.int(1..<6) {
                if random.chance(0.5) {
                    inner += broken[random.int(0..<broken.count)]
                } else {
                    inner += Array(["a", "é", "😀", "\\n", "\\u00e9", "\\ud83d\\ude00", "\\\""][random.int(0..<7)].utf8)
                }
            }
            // As a value and as a member name.
            Self.checkParse([UInt8(ascii: "\"")] + inner + [UInt8(ascii: "\"")])
            Self.checkParse(Array(#"{""#.utf8) + inner + Array(#"":1}"#.utf8))
        }
    }

    /// `text` with whitespace inserted after each structural character.
    static func spaced(_ text: String, _ random: inout SplitMix64) -> [UInt8] {
        var out: [UInt8] = []
        var inString = false
        var escaped = false
        for byte in text.utf8 {
            out.append(byte)
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            if byte == UInt8(ascii: "\"") { inString = true; continue }
            if "{}[],:".utf8.contains(byte), random.chance(0.5) {
                out += Array([" ", "\n", "\t", "\r\n  "][random.int(0..<4)].utf8)
            }
        }
        return out
    }
}

/// The fuzz tests' generators, drawn from a seeded ``SplitMix64`` so every run sees the same inputs.
extension SplitMix64 {
    /// A string mixing ASCII, escapes-to-be, multi-byte characters and control characters.
    mutating func string() -> String {
        let pieces = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "é", "ß", "😀", "👩‍👩‍👧", "\u{FFFD}", "\u{10FFFF}", "日"]
        return String((0..<int(0..<8)).map { _ in pick(pieces) }.joined())
    }

    /// A JSON number text: integers of any size, decimals, exponents.
    mutating func numberText() -> String {
        switch int(0..<5) {
        case 0: return String(Int64.random(in: .min ... .max, using: &self))
        case 1: return String(int(-1_000...1_000))
        case 2: return "\(int(-99...99)).\(int(0...9_999))"
        case 3: return "\(int(1...9))e\(pick(["", "+", "-"]))\(int(0...400))"
        default: return String(repeating: "9", count: int(19...40))
        }
    }

    /// A random JSON value (no raw fragments), at most `depth` levels deep.
    mutating func jsonValue(depth: Int) -> JSON {
        let kind = depth > 0 ? int(0..<7) : int(0..<5)
        switch kind {
        case 0: return .null
        case 1: return .bool(chance(0.5))
        case 2: return .number(numberText())
        case 3, 4: return .string(string())
        case 5: return .array((0..<int(0..<5)).map { _ in jsonValue(depth: depth - 1) })
        default:
            var members: [String: JSON] = [:]
            for _ in 0..<int(0..<5) { members[string()] = jsonValue(depth: depth - 1) }
            return .object(members)
        }
    }

    /// One random edit: flip, insert, delete or duplicate bytes, or cut the document short.
    mutating func mutate(_ bytes: inout [UInt8]) {
        let interesting = Array("{}[]\":,\\u-+.eE0 ".utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xED, 0xF4, 0xFF]
        let position = bytes.isEmpty ? 0 : int(0..<bytes.count)
        switch int(0..<6) {
        case 0 where !bytes.isEmpty: bytes[position] = pick(interesting)
        case 1: bytes.insert(pick(interesting), at: min(position, bytes.count))
        case 2 where !bytes.isEmpty: bytes.remove(at: position)
        case 3 where !bytes.isEmpty:
            let end = min(bytes.count, position + int(1...8))
            bytes.insert(contentsOf: bytes[position..<end], at: int(0...bytes.count))
        case 4: bytes.removeLast(int(0...bytes.count))
        default: bytes[position...].reverse()
        }
    }
}
