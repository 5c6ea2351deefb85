import Crypto
import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// An asset lives while a record version references it; the collector reclaims the rest.
@Suite("Asset lifecycle")
struct AssetLifecycleTests {
    static let hour: Int64 = 3_600_000

    /// A server whose collector reclaims at once (no grace period) when asked.
    static func withServer<T>(_ engine: Engine, _ body: (TestServer) async throws -> T) async throws -> T {
        try await TestServer.with(engine, configure: { $0.assets.gracePeriod = .zero }, body)
    }

    static func database(_ client: TestClient, scope: DatabaseScope = .private) throws -> DatabaseKey {
        DatabaseKey(
            container: TestServer.container, environment: .development, scope: scope,
            owner: try #require(client.userRecordName))
    }

    static func sha(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    @Test(arguments: Engine.available) func deletingOrReplacingARecordFreesItsAsset(engine: Engine) async throws {
        try await Self.withServer(engine) { server in
            let alice = try await server.user("alice")
            let database = try Self.database(alice)
            let (one, two, three) = (testBytes(1000, seed: 1), testBytes(1000, seed: 2), testBytes(1000, seed: 3))
            let fileOne = try await alice.uploadAsset(one, record: "a", field: "image")
            _ = try await alice.modify("_defaultZone", [assetOp("create", "a", ["image": (fileOne, "ASSETID")])])
            let url = try #require(
                try await alice.lookup("a").records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
            // Kept while referenced, however often the collector runs.
            try await server.server.collectAssetsNow()
            #expect(try await alice.transfer(url, method: .GET).bytes == one)

            // Replaced by another file: the first is freed, the second kept.
            let fileTwo = try await alice.uploadAsset(two, record: "a", field: "image")
            _ = try await alice.modify("_defaultZone", [assetOp("forceUpdate", "a", ["image": (fileTwo, "ASSETID")])])
            // A second record holding the third file, then deleted.
            let fileThree = try await alice.uploadAsset(three, record: "b", field: "image")
            _ = try await alice.modify("_defaultZone", [assetOp("create", "b", ["image": (fileThree, "ASSETID")])])
            _ = try await alice.modify("_defaultZone", [op("forceDelete", "b")])

            let report = try await server.server.collectAssetsNow()
            #expect(report.blobs == 2)
            #expect(try await server.server.store.assetSize(sha256: Self.sha(one), in: database) == nil)
            #expect(try await server.server.store.assetSize(sha256: Self.sha(three), in: database) == nil)
            #expect(try await server.server.store.assetSize(sha256: Self.sha(two), in: database) == 1000)
            let gone = try await alice.transfer(url, method: .GET)
            #expect(gone.status == 404)
            #expect(gone.serverErrorCode == "NOT_FOUND")
            let current = try #require(
                try await alice.lookup("a").records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
            #expect(try await alice.transfer(current, method: .GET).bytes == two)
        }
    }

    @Test(arguments: Engine.available) func cascadesAndZoneDeletionFreeAssets(engine: Engine) async throws {
        try await Self.withServer(engine) { server in
            let alice = try await server.user("alice")
            let database = try Self.database(alice)
            _ = try await alice.createZone("Album")
            _ = try await alice.createZone("Trip")
            let (childBytes, tripBytes) = (testBytes(700, seed: 4), testBytes(800, seed: 5))
            let childFile = try await alice.uploadAsset(childBytes, zone: "Album", record: "child", field: "image")
            let parentRef: JSON = ["recordName": "parent", "action": "DELETE_SELF"]
            _ = try await alice.modify(
                "Album",
                [
                    assetOp("create", "parent", ["title": ("p", "STRING")], recordType: "Folder"),
                    assetOp("create", "child", ["image": (childFile, "ASSETID"), "parent": (parentRef, "REFERENCE")]),
                ])
            let tripFile = try await alice.uploadAsset(tripBytes, zone: "Trip", record: "t", field: "image")
            let saved = try await alice.modify("Trip", [assetOp("create", "t", ["image": (tripFile, "ASSETID")])])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")

            try await server.server.collectAssetsNow()
            #expect(try await server.server.store.assetSize(sha256: Self.sha(childBytes), in: database) == 700)

            _ = try await alice.modify("Album", [op("forceDelete", "parent")])
            _ = try await alice.post(
                "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "Trip"]]]]])
            let report = try await server.server.collectAssetsNow()
            #expect(report.blobs == 2)
            #expect(try await server.server.store.assetSize(sha256: Self.sha(childBytes), in: database) == nil)
            #expect(try await server.server.store.assetSize(sha256: Self.sha(tripBytes), in: database) == nil)
        }
    }

    @Test(arguments: Engine.available) func uploadsNeverSavedAreReclaimedOnceExpired(engine: Engine) async throws {
        try await Self.withServer(engine) { server in
            let alice = try await server.user("alice")
            let database = try Self.database(alice)
            let bytes = testBytes(4000, seed: 6)
            let file = try await alice.uploadAsset(bytes, record: "never", field: "image")
            // A partial upload, never finished.
            let partial = try #require(try await alice.requestUpload(record: "half", field: "image").url)
            _ = try await alice.transfer(
                partial, method: .PUT, bytes: testBytes(100), headers: [("Content-Range", "bytes 0-99/200")])

            // Before the receipt expires the bytes wait for their save.
            try await server.server.collectAssetsNow()
            #expect(try await server.server.store.assetSize(sha256: Self.sha(bytes), in: database) == 4000)

            // After: reclaimed, and the receipt attaches nothing.
            let later = wallClockMillis() + 25 * Self.hour
            let report = try await server.server.collectAssetsNow(now: later)
            #expect(report.blobs == 1)
            #expect(report.uploads == 2)
            #expect(try await server.server.store.assetSize(sha256: Self.sha(bytes), in: database) == nil)
            let late = try await alice.modify("_defaultZone", [assetOp("create", "never", ["image": (file, "ASSETID")])])
            #expect(late.records.first?["serverErrorCode"]?.string == "BAD_REQUEST", "\(late.text)")
        }
    }

    @Test func theSameBytesAreStoredOncePerDatabase() async throws {
        try await Self.withServer(.sqlite) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let bytes = testBytes(10_000, seed: 7)
            for name in ["a", "b", "c"] {
                let file = try await alice.uploadAsset(bytes, record: name, field: "image")
                let saved = try await alice.modify("_defaultZone", [assetOp("create", name, ["image": (file, "ASSETID")])])
                #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            }
            let bobFile = try await bob.uploadAsset(bytes, record: "x", field: "image")
            _ = try await bob.modify("_defaultZone", [assetOp("create", "x", ["image": (bobFile, "ASSETID")])])

            guard case .sqlite(let directory) = server.storage else { return }
            let blobs = URL(fileURLWithPath: directory).appendingPathComponent("assets/blobs")
            let files = try FileManager.default.subpathsOfDirectory(atPath: blobs.path).filter { $0.contains("/") }
            #expect(files.count == 2, "one blob in alice's database, one in bob's: \(files)")
            #expect(files.allSatisfy { $0.hasSuffix(Self.sha(bytes)) })

            // Deleting two of alice's three records keeps the shared blob.
            _ = try await alice.modify("_defaultZone", [op("forceDelete", "a"), op("forceDelete", "b")])
            try await server.server.collectAssetsNow()
            let url = try #require(
                try await alice.lookup("c").records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
            #expect(try await alice.transfer(url, method: .GET).bytes == bytes)
        }
    }
}

/// The server's clock reading, as the collector's `now` takes it.
func wallClockMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
