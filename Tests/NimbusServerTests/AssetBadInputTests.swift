import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Bad asset input gets a clear CloudKit error, stores nothing that could leak, and leaves
/// the server serving.
@Suite("Asset bad input")
struct AssetBadInputTests {
    @Test(arguments: Engine.available) func unknownUsedAndExpiredUploadURLsAreRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let url = try #require(try await alice.requestUpload(record: "p1", field: "image").url)

            let unknown = try await alice.transfer(server.server.baseURL + "/assets/1/upload/bm90LWEtdG9rZW4.AAAAAAAAAAAAAAAAAAAAAA", bytes: [1, 2, 3])
            #expect(unknown.status == 404)
            #expect(unknown.serverErrorCode == "NOT_FOUND")
            let forged = try await alice.transfer(String(url.dropLast(3)) + "AAA", bytes: [1, 2, 3])
            #expect(forged.serverErrorCode == "NOT_FOUND")

            let first = try await alice.transfer(url, bytes: [1, 2, 3])
            #expect(first.status == 200)
            let second = try await alice.transfer(url, bytes: [4, 5, 6])
            #expect(second.status == 400)
            #expect(second.serverErrorCode == "BAD_REQUEST")
            #expect(second.json["reason"]?.string?.contains("already used") == true)
        }
        try await TestServer.with(engine, configure: { $0.assets.uploadLifetime = .zero }) { server in
            let alice = try await server.user("alice")
            let url = try #require(try await alice.requestUpload(record: "p1", field: "image").url)
            let expired = try await alice.transfer(url, bytes: [1, 2, 3])
            #expect(expired.status == 400)
            #expect(expired.json["reason"]?.string?.contains("expired") == true)
        }
    }

    @Test(arguments: Engine.available) func receiptsBindUserRecordFieldChecksumAndSize(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let bytes = testBytes(5000)
            let file = try await alice.uploadAsset(bytes, record: "p1", field: "image")

            func refused(_ client: TestClient, _ operation: JSON, code: String, _ phrase: String) async throws {
                let reply = try await client.modify("_defaultZone", [operation])
                let item = try #require(reply.records.first)
                #expect(item["serverErrorCode"]?.string == code, "\(reply.text)")
                #expect(item["reason"]?.string?.contains(phrase) == true, "\(reply.text)")
                #expect(item["recordName"]?.string != nil)
            }
            // Another user (in their own database): the receipt is not theirs.
            try await refused(bob, assetOp("create", "p1", ["image": (file, "ASSETID")]), code: "ACCESS_DENIED", "another user")
            // Another field or record.
            try await refused(alice, assetOp("create", "p1", ["thumbnail": (file, "ASSETID")]), code: "BAD_REQUEST", "issued for field 'image'")
            try await refused(alice, assetOp("create", "p2", ["image": (file, "ASSETID")]), code: "BAD_REQUEST", "of record 'p1'")
            // A checksum or size other than the upload's.
            var wrongChecksum = file
            wrongChecksum = .object((file.object ?? [:]).merging(["fileChecksum": .string(checksum([9]))]) { $1 })
            try await refused(alice, assetOp("create", "p1", ["image": (wrongChecksum, "ASSETID")]), code: "BAD_REQUEST", "fileChecksum")
            let wrongSize: JSON = .object((file.object ?? [:]).merging(["size": .int(4999)]) { $1 })
            try await refused(alice, assetOp("create", "p1", ["image": (wrongSize, "ASSETID")]), code: "BAD_REQUEST", "size 4999")
            // A made-up receipt, and no receipt for bytes the database does not hold.
            let madeUp: JSON = .object((file.object ?? [:]).merging(["receipt": "forged"]) { $1 })
            try await refused(alice, assetOp("create", "p1", ["image": (madeUp, "ASSETID")]), code: "BAD_REQUEST", "not one this server issued")
            let bare: JSON = ["fileChecksum": .string(checksum([1, 2])), "size": 2]
            try await refused(alice, assetOp("create", "p1", ["image": (bare, "ASSETID")]), code: "BAD_REQUEST", "no asset with fileChecksum")
            // Nothing was saved by any of these.
            #expect(try await alice.lookup("p1").records.first?["serverErrorCode"]?.string == "NOT_FOUND")
            #expect(try await alice.lookup("p2").records.first?["serverErrorCode"]?.string == "NOT_FOUND")

            // The receipt still works for what it was issued for, once.
            let saved = try await alice.modify("_defaultZone", [assetOp("create", "p1", ["image": (file, "ASSETID")])])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            try await refused(alice, assetOp("forceReplace", "p1", ["image": (file, "ASSETID")]), code: "BAD_REQUEST", "already used")
            // Sent back without its receipt (an unchanged field), the stored asset is accepted.
            let stored: JSON = ["fileChecksum": .string(checksum(bytes)), "size": 5000]
            let resent = try await alice.modify(
                "_defaultZone", [assetOp("forceUpdate", "p1", ["image": (stored, "ASSET"), "title": ("x", "STRING")])])
            #expect(resent.records.first?["serverErrorCode"] == nil, "\(resent.text)")
        }
    }

    @Test(arguments: Engine.available) func anAtomicBatchWithABadReceiptWritesNothingAndSpendsNothing(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Photos")
            let good = try await alice.uploadAsset(testBytes(100), zone: "Photos", record: "a", field: "image")
            let other = try await alice.uploadAsset(testBytes(200), zone: "Photos", record: "b", field: "image")
            let failed = try await alice.modify(
                "Photos",
                [assetOp("create", "a", ["image": (good, "ASSETID")]), assetOp("create", "b", ["thumb": (other, "ASSETID")])],
                atomic: true)
            #expect(failed.records.map { $0["serverErrorCode"]?.string } == ["ATOMIC_ERROR", "BAD_REQUEST"], "\(failed.text)")
            // The good receipt was not spent by the failed batch.
            let retried = try await alice.modify("Photos", [assetOp("create", "a", ["image": (good, "ASSETID")])])
            #expect(retried.records.first?["serverErrorCode"] == nil, "\(retried.text)")
        }
    }

    @Test(arguments: Engine.available) func anAssetOverTheLimitIsRefusedAndNothingIsKept(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.assets.maxAssetBytes = 100_000 }) { server in
            let alice = try await server.user("alice")
            let url = try #require(try await alice.requestUpload(record: "p1", field: "image").url)
            let tooBig = try await alice.transfer(url, bytes: testBytes(150_000))
            #expect(tooBig.status == 400)
            #expect(tooBig.serverErrorCode == "LIMIT_EXCEEDED")
            #expect(tooBig.json["reason"]?.string?.contains("100000 bytes") == true)
            // Nothing of it is held; the same URL takes a file within the limit.
            #expect(try await alice.transfer(url, method: .GET).json["receivedBytes"]?.int64 == 0)
            let chunkTooBig = try await alice.transfer(
                url, method: .PUT, bytes: [1], headers: [("Content-Range", "bytes 0-0/100001")])
            #expect(chunkTooBig.serverErrorCode == "LIMIT_EXCEEDED")
            let fits = try await alice.transfer(url, bytes: testBytes(100_000))
            #expect(fits.status == 200)
            // `assets/upload` itself refuses more than 200 tokens.
            let many = try await alice.post(
                "assets/upload",
                ["tokens": .array((0...200).map { ["recordName": .string("r\($0)"), "fieldName": "f"] })])
            #expect(many.serverErrorCode == "LIMIT_EXCEEDED")
        }
    }

    @Test func aTruncatedBodyKeepsWhatArrivedForAResume() async throws {
        try await TestServer.with { server in
            let alice = try await server.user("alice")
            let url = try #require(try await alice.requestUpload(record: "p1", field: "image").url)
            let path = try #require(URL(string: url)?.path)
            let bytes = testBytes(200_000, seed: 9)
            let connection = try await RawConnection.open(port: server.server.port)
            try await connection.send(
                "POST \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(bytes.count)\r\n\r\n")
            try await connection.send(Array(bytes[0..<80_000]))
            try await connection.finishSending()
            // The server answers once it has stored what arrived (then closes).
            let answer = try await connection.waitForClose()
            #expect(answer.status == 400, "\(answer.text)")
            #expect(answer.json?["serverErrorCode"]?.string == "BAD_REQUEST")

            // The server keeps serving and holds what arrived, for a resume.
            #expect(try await alice.transfer(url, method: .GET).json["receivedBytes"]?.int64 == 80_000)
            let rest = try await alice.transfer(
                url, method: .PUT, bytes: Array(bytes[80_000...]), headers: [("Content-Range", "bytes 80000-199999/200000")])
            #expect(rest.json["singleFile"]?["fileChecksum"]?.string == checksum(bytes), "\(rest.json)")
        }
    }
}

