import Testing

import struct NimbusProtocol.SplitMix64

@testable import NimbusStore

/// The byte search that decides whether a record's fields are parsed for assets, `DELETE_SELF`
/// references and a parent: it finds the marker wherever it is, and only the whole marker.
@Suite("Fields text search")
struct FieldsTextTests {
    static let asset = Array(#""ASSET"#.utf8)

    /// The server's check before it sends stored fields as they are: `null` anywhere.
    @Test func storedFieldsThatMayHoldNullAreFoundWhereverTheWordIs() {
        for text in ["null", #"{"a":null}"#, #"{"a":{"value":"nullable"}}"#, "nnull", "xx null"] {
            #expect(StoredRecord.mayHoldNull(text), "\(text)")
        }
        for text in ["", "nul", "nul l", #"{"a":{"type":"STRING","value":"Null"}}"#, "n\u{FC}ll", "nulL"] {
            #expect(!StoredRecord.mayHoldNull(text), "\(text)")
        }
    }

    @Test func findsTheMarkerAnywhereAndOnlyWhole() {
        #expect(FieldsText.contains(Self.asset, in: #""ASSET""#))
        #expect(FieldsText.contains(Self.asset, in: #"{"f":{"type":"ASSET","value":{}}}"#))
        #expect(FieldsText.contains(Self.asset, in: #"{"f":{"type":"ASSETID""#), "a prefix is enough: the caller parses to be sure")
        #expect(FieldsText.contains(Self.asset, in: #"""ASSET"#), "after a partial start")
        #expect(!FieldsText.contains(Self.asset, in: #"{"f":{"type":"ASSE"#))
        #expect(!FieldsText.contains(Self.asset, in: #"{"f":{"type":"STRING","value":"asset"}}"#), "case matters")
        #expect(!FieldsText.contains(Self.asset, in: ""))
        #expect(!FieldsText.contains([], in: "anything"))
        #expect(FieldsText.contains(Array("é\"ASSET".utf8), in: #"{"name":"café"ASSET"}"#))
        // Bytes (a written page of records) answer as their text does.
        for text in [#"[{"f":{"type":"ASSET_LIST"}}]"#, #"[{"f":{"type":"ASSE"}}]"#, "", #""ASSET"#] {
            #expect(FieldsText.contains(Self.asset, in: Array(text.utf8)) == FieldsText.contains(Self.asset, in: text))
        }
        #expect(AssetReferences.mentioned(in: Array(#"[{"f":{"type":"ASSET_LIST"}}]"#.utf8)))
    }

    @Test func theRulesUseIt() throws {
        #expect(AssetReferences.mentioned(in: #"{"photo":{"type":"ASSET","value":{}}}"#))
        #expect(!AssetReferences.mentioned(in: #"{"title":{"type":"STRING","value":"an ASSET"}}"#))
        #expect(AssetReferences.mentioned(in: #"{"title":{"type":"STRING","value":"ASSET"}}"#), "may hold: the caller parses")
        #expect(DeleteSelfReferences.mentioned(in: #"{"p":{"type":"REFERENCE","value":{"action":"DELETE_SELF"}}}"#))
        #expect(!DeleteSelfReferences.mentioned(in: #"{"p":{"type":"REFERENCE","value":{"action":"NONE"}}}"#))
    }

    /// The search skips ahead with `memchr` on one byte of the marker: over random texts
    /// from a small alphabet (so markers and their parts occur often, at every offset, at
    /// both ends), it answers as a plain byte-by-byte search does.
    @Test func answersAsAPlainSearchOverRandomTexts() {
        var generator = SplitMix64(seed: 0x5EED_F1E1D5)
        let alphabet = Array(#""ASETD_Lcl.ok,:"#.utf8)
        let markers = [Self.asset, Array("DELETE_SELF".utf8), Array(#""cloudkit."#.utf8), Array("A".utf8), Array(#"""#.utf8)]
        var found = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...40, using: &generator)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
            let marker = markers.randomElement(using: &generator)!
            let expected = Self.plainSearch(marker, in: bytes)
            #expect(FieldsText.contains(marker, in: bytes) == expected, "\(String(decoding: bytes, as: UTF8.self))")
            #expect(FieldsText.contains(marker, in: String(decoding: bytes, as: UTF8.self)) == expected)
            if expected { found += 1 }
        }
        #expect(found > 1_000, "the texts hold markers often enough to test both answers")
    }

    static func plainSearch(_ marker: [UInt8], in bytes: [UInt8]) -> Bool {
        guard !marker.isEmpty, bytes.count >= marker.count else { return false }
        return (0...(bytes.count - marker.count)).contains { Array(bytes[$0..<($0 + marker.count)]) == marker }
    }
}
