import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// A server whose asset bytes live in an S3-compatible bucket (`--assets s3://…`), on each
/// engine: a file of several segments round-trips, ranges included, and with the redirect flag
/// a download answers `307` to a pre-signed URL only after its own token was checked.
/// (The whole asset suite runs on the bucket too: `NIMBUS_TEST_ASSETS=s3`, see `.ci/run`.)
@Suite("Assets in an S3-compatible store", .enabled(if: TestObjectStore.enabled, TestObjectStore.howTo))
struct ObjectStoreAssetTests {
    static func onObjectStore(redirect: Bool = false) -> (inout ServerConfiguration) -> Void {
        let location = Result { try TestObjectStore.fresh() }
        return { configuration in
            if let location = try? location.get() { configuration.assets.location = .objectStore(location) }
            configuration.assets.redirectDownloads = redirect
        }
    }

    /// Uploads `bytes` as field `file` of record `name` and answers its download URL.
    static func saved(_ bytes: [UInt8], as name: String, by client: TestClient) async throws -> String {
        let singleFile = try await client.uploadAsset(bytes, record: name, field: "file")
        #expect(singleFile["fileChecksum"]?.string == checksum(bytes))
        _ = try await client.modify("_defaultZone", [assetOp("create", name, ["file": (singleFile, "ASSETID")])])
        let url = try #require(
            try await client.lookup(name).records.first?["fields"]?["file"]?["value"]?["downloadURL"]?.string)
        return url.replacingOccurrences(of: "${f}", with: "f.bin")
    }

    @Test(arguments: Engine.available) func aLargeFileRoundTripsThroughTheBucket(engine: Engine) async throws {
        _ = try TestObjectStore.fresh()
        try await TestServer.with(engine, configure: Self.onObjectStore()) { server in
            let alice = try await server.user("alice")
            let bytes = testBytes(12_000_000, seed: 11)
            let url = try await Self.saved(bytes, as: "big", by: alice)
            let whole = try await alice.transfer(url, method: .GET)
            #expect(whole.status == 200)
            #expect(whole.bytes == bytes)
            let ranged = try await alice.transfer(url, method: .GET, headers: [("Range", "bytes=5242870-5242889")])
            #expect(ranged.status == 206)
            #expect(ranged.bytes == Array(bytes[5_242_870..<5_242_890]))
            #expect(ranged.headers.first(name: "Content-Range") == "bytes 5242870-5242889/12000000")
        }
    }

    /// A bucket that refuses the bytes (here: one that does not exist) is the server's failure,
    /// answered `TRY_AGAIN_LATER`, never the "body ended early" `BAD_REQUEST` of a client's.
    @Test func aStoreThatRefusesTheBytesIsTheServersFailureNotTheClients() async throws {
        var location = try TestObjectStore.fresh()
        location.bucket = "nimbus-no-such-bucket"
        try await TestServer.with(.sqlite, configure: { $0.assets.location = .objectStore(location) }) { server in
            let alice = try await server.user("alice")
            do {
                _ = try await alice.uploadAsset(testBytes(1_000, seed: 13), record: "x", field: "file")
                Issue.record("the upload into a missing bucket succeeded")
            } catch {
                #expect("\(error)".contains("TRY_AGAIN_LATER"), "\(error)")
                #expect(!"\(error)".contains("BAD_REQUEST"), "\(error)")
            }
        }
    }

    @Test(arguments: Engine.available) func theRedirectFlagSendsAnAuthorisedDownloadToAPresignedURL(engine: Engine) async throws {
        let location = try TestObjectStore.fresh()
        try await TestServer.with(engine, configure: { configuration in
            configuration.assets.location = .objectStore(location)
            configuration.assets.redirectDownloads = true
        }) { server in
            let alice = try await server.user("alice")
            let bytes = testBytes(400_000, seed: 12)
            let url = try await Self.saved(bytes, as: "r", by: alice)

            let client = HTTPClient(configuration: .init(redirectConfiguration: .disallow))
            try await scoped {
                let answer = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
                #expect(answer.status == .temporaryRedirect)
                let target = try #require(answer.headers.first(name: "Location"))
                #expect(target.hasPrefix(location.endpoint + "/" + location.bucket + "/"), "\(target)")
                #expect(target.contains("X-Amz-Signature="))
                // The store serves the bytes on its own.
                let fetched = try await alice.transfer(target, method: .GET)
                #expect(fetched.status == 200)
                #expect(fetched.bytes == bytes)

                // A client that follows redirects (AsyncHTTPClient by default) gets its range.
                let followed = try await alice.transfer(url, method: .GET, headers: [("Range", "bytes=10-19")])
                #expect(followed.status == 206)
                #expect(followed.bytes == Array(bytes[10..<20]))

                // A forged or expired token is refused before any redirect.
                let forged = try await client.execute(
                    HTTPClientRequest(url: url.replacingOccurrences(of: "/f.bin", with: "x/f.bin")), timeout: .seconds(60))
                #expect(forged.status != .temporaryRedirect)
                #expect(forged.headers.first(name: "Location") == nil)
                // An asset no longer in the database is not redirected to either.
                _ = try await alice.modify("_defaultZone", [op("forceDelete", "r")])
                _ = try await server.server.collectAssetsNow(now: wallClockMillis() + 7_200_000)
                let gone = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
                #expect(gone.status == .notFound)
            } cleanup: {
                try await client.shutdown()
            }
        }
    }
}
