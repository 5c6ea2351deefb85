import Testing

@testable import NimbusStore

/// The byte search that decides whether a record's fields are parsed for assets, `DELETE_SELF`
/// references and a parent: it finds the marker wherever it is, and only the whole marker.
@Suite("Fields text search")
struct FieldsTextTests {
    static let asset = Array(#""ASSET"#.utf8)

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
}
