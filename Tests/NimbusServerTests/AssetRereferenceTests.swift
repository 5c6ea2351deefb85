import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `assets/rereference`, as MistKit and other CloudKit Web Services clients use it: ask for
/// the asset dictionary of an existing field, save it as another record's `ASSETID`.
@Suite("Asset rereference")
struct AssetRereferenceTests {
    @Test(arguments: Engine.available) func aRereferencedAssetOutlivesItsFirstRecord(engine: Engine) async throws {
        try await AssetLifecycleTests.withServer(engine) { server in
            let alice = try await server.user("alice")
            let database = try AssetLifecycleTests.database(alice)
            let bytes = testBytes(40_000, seed: 9)
            let file = try await alice.uploadAsset(bytes, record: "original", field: "image")
            _ = try await alice.modify("_defaultZone", [assetOp("create", "original", ["image": (file, "ASSETID")])])

            let reply = try await alice.post(
                "assets/rereference",
                ["zoneID": ["zoneName": "_defaultZone"], "assets": [["recordName": "original", "fieldName": "image"]]])
            #expect(reply.status == 200, "\(reply.text)")
            let asset = try #require(reply["assets"]?.array?.first)
            #expect(asset["recordName"]?.string == "original")
            #expect(asset["fieldName"]?.string == "image")
            #expect(asset["fileChecksum"]?.string == checksum(bytes))
            #expect(asset["size"]?.int64 == 40_000)
            #expect(asset["receipt"] == nil && asset["downloadURL"] == nil)

            let copy = try await alice.modify(
                "_defaultZone", [assetOp("create", "copy", ["cover": (asset, "ASSETID")], recordType: "Album")])
            #expect(copy.records.first?["serverErrorCode"] == nil, "\(copy.text)")
            _ = try await alice.modify("_defaultZone", [op("forceDelete", "original")])
            let report = try await server.server.collectAssetsNow()
            #expect(report.blobs == 0, "the copy still holds the bytes")
            #expect(try await server.server.store.assetSize(sha256: AssetLifecycleTests.sha(bytes), in: database) == 40_000)
            let url = try #require(
                try await alice.lookup("copy").records.first?["fields"]?["cover"]?["value"]?["downloadURL"]?.string)
            #expect(try await alice.transfer(url, method: .GET).bytes == bytes)

            _ = try await alice.modify("_defaultZone", [op("forceDelete", "copy")])
            #expect(try await server.server.collectAssetsNow().blobs == 1, "freed with its last record")
        }
    }

    /// CloudKit JS puts the dictionary `assets/rereference` answers (recordName, fieldName,
    /// fileChecksum, size) back into a record without a type: it is an ASSET, whether the
    /// schema knows the field (its type decides) or not (a dictionary with `fileChecksum` is
    /// an asset, though it has a `recordName`).
    @Test(arguments: Engine.available) func aRereferencedAssetPutBackUntypedIsAnAsset(engine: Engine) async throws {
        try await AssetLifecycleTests.withServer(engine) { server in
            let alice = try await server.user("alice")
            let bytes = testBytes(5_000, seed: 4)
            let file = try await alice.uploadAsset(bytes, record: "original", field: "image")
            _ = try await alice.modify("_defaultZone", [assetOp("create", "original", ["image": (file, "ASSETID")])])
            let reply = try await alice.post(
                "assets/rereference",
                ["zoneID": ["zoneName": "_defaultZone"], "assets": [["recordName": "original", "fieldName": "image"]]])
            let asset = try #require(reply["assets"]?.array?.first, "\(reply.text)")
            #expect(asset["recordName"] == "original" && asset["fieldName"] == "image")

            let saved = try await alice.modify(
                "_defaultZone",
                [
                    op("create", "known-field", "Photo", fields: ["image": asset]),
                    op("create", "new-field", "Album", fields: ["cover": asset]),
                ])
            #expect(saved.status == 200, "\(saved.text)")
            for (record, field) in zip(saved.records, ["image", "cover"]) {
                #expect(record["serverErrorCode"] == nil, "\(saved.text)")
                #expect(record["fields"]?[field]?["type"] == "ASSET", "\(field): \(saved.text)")
                #expect(record["fields"]?[field]?["value"]?["fileChecksum"] == asset["fileChecksum"])
            }
            let url = try #require(
                try await alice.lookup("new-field").records.first?["fields"]?["cover"]?["value"]?["downloadURL"]?.string)
            #expect(try await alice.transfer(url, method: .GET).bytes == bytes)
        }
    }

    @Test(arguments: Engine.available) func aBadEntryFailsTheWholeRequest(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let file = try await alice.uploadAsset(testBytes(100), record: "r", field: "image")
            let pages = try await alice.uploadAsset(testBytes(200, seed: 2), record: "r", field: "pages")
            _ = try await alice.modify(
                "_defaultZone",
                [assetOp("create", "r", [
                    "image": (file, "ASSETID"), "pages": ([pages], "ASSETID_LIST"), "title": ("T", "STRING"),
                ])])

            func rereference(_ entries: [(String, String)], zone: String = "_defaultZone") async throws -> TestClient.Reply {
                try await alice.post(
                    "assets/rereference",
                    [
                        "zoneID": ["zoneName": .string(zone)],
                        "assets": .array(entries.map { ["recordName": .string($0.0), "fieldName": .string($0.1)] }),
                    ])
            }
            for (entries, fragment) in [
                ([("r", "image"), ("missing", "image")], "record 'missing' does not exist"),
                ([("r", "nope")], "has no field 'nope'"),
                ([("r", "title")], "is STRING, not ASSET"),
                ([("r", "pages")], "is an ASSET_LIST"),
            ] {
                let refused = try await rereference(entries)
                #expect(refused.status == 400, "\(refused.text)")
                #expect(refused.serverErrorCode == "BAD_REQUEST")
                #expect(refused["reason"]?.string?.contains(fragment) == true, "\(refused.text)")
            }
            let empty = try await alice.post("assets/rereference", ["assets": []])
            #expect(empty.serverErrorCode == "BAD_REQUEST")
            let noZone = try await rereference([("r", "image")], zone: "Nowhere")
            #expect(noZone.serverErrorCode == "ZONE_NOT_FOUND", "\(noZone.text)")

            // Another user's database holds no such record: nothing of Alice's leaks to Bob.
            let bob = try await server.user("bob")
            let foreign = try await bob.post(
                "assets/rereference", ["assets": [["recordName": "r", "fieldName": "image"]]])
            #expect(foreign.serverErrorCode == "BAD_REQUEST", "\(foreign.text)")
        }
    }
}
