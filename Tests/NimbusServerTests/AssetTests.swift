import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Assets through the HTTP API, as a CloudKit Web Services client uses them: `assets/upload`,
/// a POST of the bytes, `records/modify` with an `ASSETID` value, reads with `downloadURL`.
@Suite("Assets")
struct AssetTests {
    @Test(arguments: Engine.available) func uploadSaveLookupAndDownloadRoundTrip(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bytes = testBytes(300_000)
            let singleFile = try await alice.uploadAsset(bytes, record: "p1", field: "image")
            #expect(singleFile["fileChecksum"]?.string == checksum(bytes))
            #expect(singleFile["size"]?.int64 == 300_000)
            #expect(singleFile["receipt"]?.string?.isEmpty == false)

            let saved = try await alice.modify(
                "_defaultZone", [assetOp("create", "p1", ["image": (singleFile, "ASSETID"), "title": ("Cat", "STRING")])])
            let record = try #require(saved.records.first)
            #expect(record["serverErrorCode"] == nil, "\(saved.text)")
            #expect(record["fields"]?["image"]?["type"]?.string == "ASSET")
            #expect(record["fields"]?["image"]?["value"]?["receipt"] == nil, "a receipt is spent, never returned")

            let looked = try await alice.lookup("p1")
            let asset = try #require(looked.records.first?["fields"]?["image"]?["value"])
            #expect(looked.records.first?["fields"]?["image"]?["type"]?.string == "ASSET")
            #expect(asset["fileChecksum"]?.string == checksum(bytes))
            #expect(asset["size"]?.int64 == 300_000)
            let downloadURL = try #require(asset["downloadURL"]?.string)
            #expect(downloadURL.hasSuffix("/${f}"), "Apple's file-name placeholder: \(downloadURL)")

            let fetched = try await alice.transfer(
                downloadURL.replacingOccurrences(of: "${f}", with: "cat.jpg"), method: .GET)
            #expect(fetched.status == 200)
            #expect(fetched.bytes == bytes)
            #expect(fetched.headers.first(name: "Accept-Ranges") == "bytes")

            // The change feed and a query carry the download URL too.
            let feed = try await alice.changes("_defaultZone")
            #expect(feed.records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string?.hasSuffix("/${f}") == true, "\(feed.text)")
        }
    }

    @Test(arguments: Engine.available) func rangesAnswerPartialContentAndUnsatisfiable(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bytes = testBytes(2_500_000, seed: 3)
            let singleFile = try await alice.uploadAsset(bytes, record: "r1", field: "file")
            _ = try await alice.modify("_defaultZone", [assetOp("create", "r1", ["file": (singleFile, "ASSETID")])])
            let url = try #require(
                try await alice.lookup("r1").records.first?["fields"]?["file"]?["value"]?["downloadURL"]?.string)
                .replacingOccurrences(of: "${f}", with: "f.bin")

            let middle = try await alice.transfer(url, method: .GET, headers: [("Range", "bytes=1048570-2097160")])
            #expect(middle.status == 206)
            #expect(middle.headers.first(name: "Content-Range") == "bytes 1048570-2097160/2500000")
            #expect(middle.bytes == Array(bytes[1_048_570...2_097_160]))

            let tail = try await alice.transfer(url, method: .GET, headers: [("Range", "bytes=-10")])
            #expect(tail.status == 206)
            #expect(tail.bytes == Array(bytes.suffix(10)))

            let open = try await alice.transfer(url, method: .GET, headers: [("Range", "bytes=2499990-")])
            #expect(open.bytes == Array(bytes.suffix(10)))

            let past = try await alice.transfer(url, method: .GET, headers: [("Range", "bytes=2500000-")])
            #expect(past.status == 416)
            #expect(past.headers.first(name: "Content-Range") == "bytes */2500000")

            let tampered = url.replacingOccurrences(of: "/f.bin", with: "").dropLast(4) + "AAAA/f.bin"
            let guessed = try await alice.transfer(String(tampered), method: .GET)
            #expect(guessed.status == 404)
            #expect(guessed.serverErrorCode == "NOT_FOUND")
        }
    }

    @Test(arguments: Engine.available) func resumableUploadContinuesFromWhatTheServerHolds(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bytes = testBytes(3_000_000, seed: 5)
            let url = try #require(try await alice.requestUpload(record: "big", field: "video").url)

            let first = try await alice.transfer(
                url, method: .PUT, bytes: Array(bytes[0..<1_200_000]), headers: [("Content-Range", "bytes 0-1199999/3000000")])
            #expect(first.status == 202)
            #expect(first.json["receivedBytes"]?.int64 == 1_200_000)

            let status = try await alice.transfer(url, method: .GET)
            #expect(status.json["receivedBytes"]?.int64 == 1_200_000)

            let wrongOffset = try await alice.transfer(
                url, method: .PUT, bytes: Array(bytes[1_000_000...]), headers: [("Content-Range", "bytes 1000000-2999999/3000000")])
            #expect(wrongOffset.status == 409)
            #expect(wrongOffset.serverErrorCode == "CONFLICT")

            let rest = try await alice.transfer(
                url, method: .PUT, bytes: Array(bytes[1_200_000...]), headers: [("Content-Range", "bytes 1200000-2999999/3000000")])
            #expect(rest.status == 200)
            let singleFile = try #require(rest.json["singleFile"])
            #expect(singleFile["fileChecksum"]?.string == checksum(bytes))
            #expect(singleFile["size"]?.int64 == 3_000_000)

            // A client that missed the answer reads it again from the URL.
            let again = try await alice.transfer(url, method: .GET)
            #expect(again.json["singleFile"]?["receipt"] == singleFile["receipt"])

            let saved = try await alice.modify("_defaultZone", [assetOp("create", "big", ["video": (singleFile, "ASSETID")])])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            let downloaded = try await alice.transfer(
                try #require(saved.records.first?["fields"]?["video"]?["value"]?["downloadURL"]?.string), method: .GET)
            #expect(downloaded.bytes == bytes)
        }
    }

    @Test(arguments: Engine.available) func assetListsSaveAndReadEachFile(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let (reply, _) = try await alice.requestUpload(record: "album", field: "pages")
            #expect(reply.status == 200)
            let bytesA = testBytes(1000, seed: 7)
            let bytesB = testBytes(2000, seed: 8)
            let fileA = try await alice.uploadAsset(bytesA, record: "album", field: "pages")
            let fileB = try await alice.uploadAsset(bytesB, record: "album", field: "pages")
            let saved = try await alice.modify(
                "_defaultZone", [assetOp("create", "album", ["pages": ([fileA, fileB], "ASSETID_LIST")], recordType: "Album")])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            let pages = try #require(try await alice.lookup("album").records.first?["fields"]?["pages"])
            #expect(pages["type"]?.string == "ASSET_LIST")
            let urls = pages["value"]?.array?.compactMap { $0["downloadURL"]?.string } ?? []
            #expect(urls.count == 2)
            var downloads: [[UInt8]] = []
            for url in urls { downloads.append(try await alice.transfer(url, method: .GET).bytes) }
            #expect(downloads == [bytesA, bytesB])
        }
    }

    @Test(arguments: Engine.available) func aConflictsServerRecordCarriesDownloadURLs(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bytes = testBytes(5_000, seed: 12)
            let file = try await alice.uploadAsset(bytes, record: "c", field: "image")
            _ = try await alice.modify("_defaultZone", [assetOp("create", "c", ["image": (file, "ASSETID")])])
            let stale = try await alice.modify(
                "_defaultZone", [op("update", "c", "Photo", fields: ["title": "late"], tag: "stale-tag")])
            let item = try #require(stale.records.first)
            #expect(item["serverErrorCode"]?.string == "CONFLICT", "\(stale.text)")
            let url = try #require(item["serverRecord"]?["fields"]?["image"]?["value"]?["downloadURL"]?.string, "\(stale.text)")
            #expect(try await alice.transfer(url, method: .GET).bytes == bytes, "a merge can read the server's file")
        }
    }
}

/// Assets in the public database: saved by a signed-in user, read by anyone the schema lets read.
@Suite("Public assets")
struct PublicAssetTests {
    @Test(arguments: Engine.available) func anAnonymousReaderDownloadsAPublicAssetButCannotUpload(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bytes = testBytes(20_000, seed: 31)
            let file = try await alice.uploadAsset(bytes, record: "poster", field: "image", scope: "public")
            let saved = try await alice.modify("_defaultZone", [assetOp("create", "poster", ["image": (file, "ASSETID")])], scope: "public")
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")

            let anonymous = server.anonymous()
            let url = try #require(
                try await anonymous.lookup("poster", scope: "public").records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
            #expect(try await anonymous.transfer(url, method: .GET).bytes == bytes)
            let refused = try await anonymous.requestUpload(record: "x", field: "image", scope: "public").reply
            #expect(refused.status == 421)
            #expect(refused.serverErrorCode == "AUTHENTICATION_REQUIRED")
            // A receipt issued in the public database attaches nothing in a private one.
            let publicFile = try await alice.uploadAsset(bytes, record: "mine", field: "image", scope: "public")
            let crossed = try await alice.modify("_defaultZone", [assetOp("create", "mine", ["image": (publicFile, "ASSETID")])])
            #expect(crossed.records.first?["serverErrorCode"]?.string == "ACCESS_DENIED", "\(crossed.text)")
        }
    }
}
