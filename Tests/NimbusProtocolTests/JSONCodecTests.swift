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
        var generator = SystemRandomNumberGenerator()
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
