import Foundation
import NimbusProtocol
import Testing

/// The Asset dictionary on the wire: `ASSETID` in, `ASSET` out, `ASSET_LIST`, and what is refused.
@Suite("Asset wire form")
struct AssetWireTests {
    static let checksum = Data(repeating: 7, count: 32).base64EncodedString()

    static func decode(_ text: String) throws(CloudKitError) -> FieldValue {
        let json: JSON
        do { json = try JSON.parse(text) } catch { throw CloudKitError(.badRequest, "\(error)") }
        return try FieldValue(wire: WireReader(json, path: "fields.image"))
    }

    @Test func assetIDDecodesTheSingleFileDictionaryAndWritesBackAsAsset() throws {
        let value = try Self.decode(
            #"{"type":"ASSETID","value":{"fileChecksum":"\#(Self.checksum)","size":12,"receipt":"r1","wrappingKey":"k","referenceChecksum":"c"}}"#)
        let asset = try #require(value.assetValue)
        #expect(asset == Asset(fileChecksum: Self.checksum, size: 12, receipt: "r1", referenceChecksum: "c", wrappingKey: "k"))
        #expect(value.type == .asset)
        #expect(value.wireJSON()["type"]?.string == "ASSET")
        // What a record stores: no receipt, no download URL.
        #expect(value.storedFormForTest == .asset(Asset(fileChecksum: Self.checksum, size: 12, referenceChecksum: "c", wrappingKey: "k")))
        // Written and read back, byte for byte.
        var bytes: [UInt8] = []
        value.writeWire(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == value.wireJSON().serialized())
        #expect(try Self.decode(String(decoding: bytes, as: UTF8.self)) == value)
    }

    @Test func assetListsAndInference() throws {
        let list = try Self.decode(
            #"{"type":"ASSETID_LIST","value":[{"fileChecksum":"\#(Self.checksum)","size":1},{"fileChecksum":"\#(Self.checksum)","size":2}]}"#)
        #expect(list.type == .assetList)
        #expect(list.assets.map(\.size) == [1, 2])
        #expect(list.wireJSON()["type"]?.string == "ASSET_LIST")
        let inferred = try Self.decode(#"{"value":{"fileChecksum":"\#(Self.checksum)","size":3,"downloadURL":"http://x/${f}"}}"#)
        #expect(inferred.assetValue?.downloadURL == "http://x/${f}")
        #expect(FieldType(wireName: "ASSETID") == .asset)
        #expect(FieldType(rawValue: "ASSET_LIST")?.elementType == .asset)
    }

    @Test(arguments: [
        (#"{"type":"ASSETID","value":{"size":1}}"#, "fileChecksum' is required"),
        (#"{"type":"ASSETID","value":{"fileChecksum":"x"}}"#, "size' is required"),
        (#"{"type":"ASSETID","value":{"fileChecksum":"x","size":-1}}"#, "must not be negative"),
        (#"{"type":"ASSETID","value":{"fileChecksum":"","size":1}}"#, "non-empty string"),
        (#"{"type":"ASSETID","value":"abc"}"#, "fields.image"),
        (#"{"type":"ASSETID","value":{"fileChecksum":"x","size":1.5}}"#, "size"),
        (#"{"type":"ASSETS","value":{}}"#, "unknown field type 'ASSETS'"),
    ])
    func malformedAssetsAreBadRequests(text: String, phrase: String) {
        #expect {
            _ = try Self.decode(text)
        } throws: { error in
            guard let error = error as? CloudKitError else { return false }
            return error.code == .badRequest && error.reason.contains(phrase)
        }
    }
}

extension FieldValue {
    /// ``Asset/stored`` applied to the value (the store's `storedForm` lives in NimbusStore).
    var storedFormForTest: FieldValue {
        if case .asset(let asset) = self { return .asset(asset.stored) }
        return self
    }
}
