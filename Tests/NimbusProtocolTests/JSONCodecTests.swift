import Foundation
import NimbusProtocol
import Testing

@Suite("JSON codec")
struct JSONCodecTests {
    @Test func int64KeepsItsFullRange() throws {
        let json = try JSON.parse(#"{"max": 9223372036854775807, "min": -9223372036854775808}"#)
        #expect(json["max"]?.int64 == Int64.max)
        #expect(json["min"]?.int64 == Int64.min)
        #expect(json.serialized() == #"{"max":9223372036854775807,"min":-9223372036854775808}"#)
    }

    @Test func integersAreWrittenAsStringSpellsThem() {
        var generator = SystemRandomNumberGenerator()
        let edges: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1]
        let random = (0..<10_000).map { _ in Int64.random(in: .min ... .max, using: &generator) >> Int64.random(in: 0...62) }
        for value in edges + random {
            var out: [UInt8] = [UInt8(ascii: "x")]
            JSON.writeInteger(value, into: &out)
            #expect(String(decoding: out, as: UTF8.self) == "x" + String(value))
        }
    }

    /// The eight-bytes-at-a-time scan stops where a byte-by-byte scan stops, in both modes,
    /// from every offset of random texts rich in the bytes it looks for.
    @Test func thePlainByteScanStopsWhereAByteLoopStops() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x61, 0x7F, 0x80, 0xA0, 0xC3, 0xFF]
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...40, using: &generator)
            // Mostly plain letters, so that runs of eight are common.
            let bytes = (0..<count).map { _ in
                Int.random(in: 0..<4, using: &generator) == 0
                    ? alphabet.randomElement(using: &generator)! : UInt8.random(in: 0x61...0x7A, using: &generator)
            }
            bytes.withUnsafeBufferPointer { buffer in
                for start in 0...count {
                    for nonASCIIIsPlain in [false, true] {
                        let expected = (start..<count).first { position in
                            let byte = bytes[position]
                            return byte == 0x22 || byte == 0x5C || byte < 0x20 || (byte >= 0x80 && !nonASCIIIsPlain)
                        } ?? count
                        #expect(JSONPlainBytes.end(of: buffer, from: start, nonASCIIIsPlain: nonASCIIIsPlain) == expected)
                    }
                }
            }
        }
    }

    @Test func stringsRoundTripWithEscapesAndUnicode() throws {
        let original = "quote \" backslash \\ newline \n tab \t nul \u{0} emoji 😀 accent é"
        let text = JSON.string(original).serialized()
        #expect(try JSON.parse(text) == .string(original))
        #expect(try JSON.parse(#""\ud83d\ude00""#) == .string("😀"))
    }

    @Test func prettyPrintedInputIsAccepted() throws {
        let json = try JSON.parse("\u{FEFF}{\n  \"a\" : [ 1 ,\t2 ],\r\n  \"b\" : { }\n}\n".utf8.map { $0 })
        #expect(json["a"] == [1, 2])
        #expect(json["b"] == [:])
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":}", "{\"a\" 1}", "01x", "\"unterminated", "\"bad \\x escape\"", "[1] 2",
        "\"\\ud800\"", "tru", "nul", "-", "1.", "1e", "{\"a\":1,}", "\u{01}",
    ])
    func malformedInputIsASyntaxErrorNotACrash(_ text: String) {
        #expect(throws: JSONSyntaxError.self) { try JSON.parse(text) }
    }

    @Test func deepNestingIsRefusedInsteadOfOverflowingTheStack() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONSyntaxError.self) { try JSON.parse(deep) }
    }

    @Test func randomBytesNeverCrashTheParser() {
        var generator = SplitMix64(seed: 0x5EED_1500)
        let alphabet = Array("{}[]\":,0123456789-+.eEtrufalsn \\u\n".utf8) + [0xC3, 0xA9, 0xFF]
        for _ in 0..<5_000 {
            let length = Int.random(in: 0..<64, using: &generator)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
            _ = try? JSON.parse(bytes)
        }
    }

    @Test func recordDecodingNamesThePathOfABadValue() {
        let json: JSON = ["recordName": "r", "recordType": "T", "fields": ["count": ["value": "x", "type": "INT64"]]]
        #expect {
            try Record(wire: WireReader(json, path: "operations[3].record"))
        } throws: { error in
            (error as? CloudKitError)?.reason.contains("operations[3].record.fields.count") == true
        }
    }
}

@Suite("JSON codec: UTF-8 and non-finite numbers")
struct JSONUTF8AndNumberTests {
    /// Every byte sequence Foundation's own validator refuses, the parser refuses at its
    /// first byte; every one it accepts parses to the same string.
    @Test func invalidUTF8IsRefusedAtItsFirstByteNeverRepaired() throws {
        let samples: [[UInt8]] = [
            [0xFF], [0x80], [0xC3], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80],
            [0xF0, 0x80, 0x80, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xE2, 0x82],
            [0x61, 0xE2, 0x82, 0x41],
        ]
        for sample in samples {
            for escaped in [false, true] {
                let prefix = Array((escaped ? #"{"k":"\n"# : #"{"k":""#).utf8)
                let document = prefix + sample + Array(#""}"#.utf8)
                #expect(String(bytes: sample, encoding: .utf8) == nil)
                #expect(throws: JSONSyntaxError.self) { try JSON.parse(document) }
                do {
                    _ = try JSON.parse(document)
                } catch {
                    let invalidAt = prefix.count + (sample.first == 0x61 ? 1 : 0)
                    #expect(error.offset == invalidAt)
                    #expect(error.message == "invalid UTF-8 in a string")
                }
            }
        }
        // Keys are strings too.
        #expect(throws: JSONSyntaxError.self) { try JSON.parse([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]) }
        // Valid multi-byte text of every length passes through unchanged.
        let text = "é€😀\u{10FFFF}\u{FFFD}"
        #expect(try JSON.parse(Array("\"\(text)\"".utf8)) == .string(text))
        #expect(try JSON.parse(Array("\"\\n\(text)\"".utf8)) == .string("\n" + text))
    }

    /// 20,000 seeded strings of random bytes, and a byte-order mark (which is text inside a
    /// string: kept, where Foundation's `String(bytes:encoding:)` drops a leading one).
    @Test func randomBytesInStringsAreValidatedAsTheStandardLibraryValidates() throws {
        var generator = SplitMix64(seed: 0x5EED_0F7F)
        var samples = [[0xEF, 0xBB, 0xBF], [0xEF, 0xBB, 0xBF, 0x61], [0x61, 0xEF, 0xBB, 0xBF]] as [[UInt8]]
        for _ in 0..<20_000 {
            let count = Int.random(in: 1...6, using: &generator)
            samples.append(
                (0..<count).map { _ in UInt8.random(in: 0x20...0xFF, using: &generator) }
                    .filter { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
        }
        for bytes in samples {
            let document = [UInt8(ascii: "\"")] + bytes + [UInt8(ascii: "\"")]
            let expected = String(validating: bytes, as: UTF8.self)
            let parsed = try? JSON.parse(document)
            #expect(parsed == expected.map(JSON.string), "\(bytes)")
        }
        #expect(try JSON.parse(Array("\"\u{FEFF}\"".utf8)) == .string("\u{FEFF}"))
    }

    @Test func nonFiniteDoublesAreNeverWrittenAsNullOrInvalidJSON() throws {
        #expect(JSON.double(.nan).serialized() == #""NaN""#)
        #expect(JSON.double(.infinity).serialized() == #""Infinity""#)
        #expect(JSON.double(-.infinity).serialized() == #""-Infinity""#)
        let fields: [String: FieldValue] = ["x": .double(.infinity), "l": .list(elementType: .double, [.double(.nan)])]
        let text = Record.fieldsJSONText(fields)
        #expect(text == #"{"l":{"type":"DOUBLE_LIST","value":["NaN"]},"x":{"type":"DOUBLE","value":"Infinity"}}"#)
        #expect(Record.fieldsJSONText(fields, numbersAsStrings: true) == text)
        // And a reader refuses them with a reason, rather than taking them for absent.
        #expect(throws: CloudKitError.self) { try Record.fields(fromWire: try JSON.parse(text)) }
        #expect(Record.fields(fromStored: try JSON.parse(text)).fields.isEmpty)
        #expect(Set(Record.fields(fromStored: try JSON.parse(text)).skipped.map(\.name)) == ["x", "l"])
    }
}
