import NIOCore
import Testing

@testable import NimbusBench

@Suite("The bench client's records/changes scanner")
struct ChangesPageScannerTests {
    private func scan(_ text: String) throws -> BenchClient.ChangesPage {
        try ChangesPageScanner.scan(ByteBuffer(string: text))
    }

    private func record(_ name: String, fields: String = #"{"title":{"value":"x","type":"STRING"}}"#) -> String {
        #"{"recordName":\#(name),"fields":\#(fields),"recordType":"Note","created":{"timestamp":1.5e3},"n":[-0.25,0,12,true,false,null]}"#
    }

    @Test func readsNamesTokenAndMoreComing() throws {
        let text = """
             { "zoneID" : {"zoneName":"z"}, "records" : [ \(record(#""a""#)), \(record(#""b\"\u00e9\n""#)),
               \(record(#""ü漢😀""#, fields: "{}")) ], "syncToken":"tok\\/1", "moreComing" : true }\t
            """
        let page = try scan(text)
        #expect(page.recordNames == ["a", "b\"é\n", "ü漢😀"])
        #expect(page.syncToken == "tok/1")
        #expect(page.moreComing)
    }

    @Test func readsAnEmptyLastPage() throws {
        let page = try scan(#"{"records":[],"syncToken":"t","moreComing":false}"#)
        #expect(page.recordNames.isEmpty)
        #expect(!page.moreComing)
    }

    @Test func skimsTokenAndMoreComingButStillChecksTheRecords() throws {
        let skimmed = try ChangesPageScanner.skim(
            ByteBuffer(string: #"{"moreComing":true,"records":[\#(record(#""a""#))],"syncToken":"t2"}"#))
        #expect(skimmed.syncToken == "t2")
        #expect(skimmed.moreComing)
        #expect(throws: BenchError.self) {
            try ChangesPageScanner.skim(ByteBuffer(string: #"{"records":[{"a":tru}],"syncToken":"t","moreComing":false}"#))
        }
        #expect(throws: BenchError.self) {
            try ChangesPageScanner.skim(ByteBuffer(string: #"{"records":{},"syncToken":"t","moreComing":false}"#))
        }
    }

    @Test(arguments: [
        #"{"records":[],"syncToken":"t","moreComing":false"#,  // truncated
        #"{"records":[],"syncToken":"t","moreComing":false} x"#,  // text after
        #"{"records":[],"syncToken":"t"}"#,  // moreComing missing
        #"{"records":[{"recordName":"a"}],"syncToken":"t","moreComing":false}"#,  // no fields
        #"{"records":[{"recordName":"a","fields":[]}],"syncToken":"t","moreComing":false}"#,  // fields not an object
        #"{"records":[{"recordName":1,"fields":{}}],"syncToken":"t","moreComing":false}"#,  // name not a string
        #"{"records":[],"syncToken":"t\x","moreComing":false}"#,  // bad escape
        #"{"records":[],"syncToken":"t\u12G4","moreComing":false}"#,  // bad \u escape
        "{\"records\":[],\"syncToken\":\"t\u{01}\",\"moreComing\":false}",  // control character
        #"{"records":[],"syncToken":"t","moreComing":fals}"#,  // bad literal
        #"{"records":[],"syncToken":"t","moreComing":false,"x":01}"#,  // leading zero
        #"{"records":[],"syncToken":"t","moreComing":false,"x":1.}"#,  // no fraction digits
        #"{"records":[],"syncToken":"t","moreComing":false,"x":1e}"#,  // no exponent digits
        #"{"records":[],"syncToken":"t","moreComing":false,"x":[1,]}"#,  // trailing comma
        #"{"records":[],"syncToken":"t","moreComing":false,"x":{"a" 1}}"#,  // missing colon
        #"{"records":[] "syncToken":"t","moreComing":false}"#,  // missing comma
    ])
    func refusesMalformedAnswers(_ text: String) {
        #expect(throws: BenchError.self) { try scan(text) }
    }

    @Test(arguments: [
        [0xC0, 0x80],  // overlong
        [0xED, 0xA0, 0x80],  // surrogate
        [0xF4, 0x90, 0x80, 0x80],  // above U+10FFFF
        [0xE2, 0x82],  // truncated sequence
        [0xFF],
    ] as [[UInt8]])
    func refusesInvalidUTF8(_ sequence: [UInt8]) {
        var bytes = Array(#"{"records":[],"syncToken":"t"#.utf8)
        bytes += sequence
        bytes += Array(#"","moreComing":false}"#.utf8)
        #expect(throws: BenchError.self) { try ChangesPageScanner.scan(ByteBuffer(bytes: bytes)) }
    }

    @Test func refusesNestingDeeperThanAnyAnswer() {
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: BenchError.self) {
            try scan(#"{"records":[],"syncToken":"t","moreComing":false,"x":\#(deep)}"#)
        }
    }
}
