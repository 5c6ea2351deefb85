import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Where the nodes of a cluster keep asset bytes that all of them reach.
enum SharedAssets: String, CaseIterable, CustomTestStringConvertible {
    /// PostgreSQL's own chunks (the default of PostgreSQL mode).
    case postgres
    /// A directory every node mounts (`--assets file:///…`).
    case directory
    /// An S3-compatible bucket (`--assets s3://…`), when one is configured.
    case s3

    static var available: [SharedAssets] {
        TestObjectStore.enabled ? allCases : [.postgres, .directory]
    }

    var testDescription: String { rawValue }

    /// The location, and a directory to remove afterwards.
    func location() throws -> (AssetLocation, String?) {
        switch self {
        case .postgres: return (.engineDefault, nil)
        case .directory:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-shared-\(UUID().uuidString)").path
            return (.directory(path), path)
        case .s3: return (.objectStore(try TestObjectStore.fresh()), nil)
        }
    }
}

/// Asset bytes every node reaches (PostgreSQL's chunks, a shared directory, an S3-compatible
/// bucket): an upload through one node is saved, read and collected through another.
@Suite("Assets across PostgreSQL nodes", .enabled(if: Engine.available.contains(.postgres), Engine.postgresHowTo))
struct MultiNodeAssetTests {
    @Test(arguments: SharedAssets.available) func anUploadThroughOneNodeDownloadsFromAnother(assets: SharedAssets) async throws {
        let (location, directory) = try assets.location()
        defer { if let directory { try? FileManager.default.removeItem(atPath: directory) } }
        try await TestCluster.with(nodes: 2, assets: location) { cluster in
            let alice = try await cluster.user("alice", node: 0)
            let onNodeTwo = cluster.client(alice, node: 1)
            let bytes = testBytes(2_600_000, seed: 21)
            // Tokens from node 1, half the bytes to node 1, the rest to node 2.
            let url = try #require(try await alice.requestUpload(record: "p1", field: "image").url)
            let first = try await alice.transfer(
                url, method: .PUT, bytes: Array(bytes[0..<1_300_000]), headers: [("Content-Range", "bytes 0-1299999/2600000")])
            #expect(first.status == 202)
            let path = String(url.dropFirst(cluster.nodes[0].baseURL.count))
            let rest = try await onNodeTwo.transfer(
                cluster.nodes[1].baseURL + path, method: .PUT, bytes: Array(bytes[1_300_000...]),
                headers: [("Content-Range", "bytes 1300000-2599999/2600000")])
            let singleFile = try #require(rest.json["singleFile"], "\(rest.json)")
            #expect(singleFile["fileChecksum"]?.string == checksum(bytes))

            // Saved through node 2, downloaded from node 1 (the URL names node 2's origin).
            let saved = try await onNodeTwo.modify("_defaultZone", [assetOp("create", "p1", ["image": (singleFile, "ASSETID")])])
            let downloadURL = try #require(saved.records.first?["fields"]?["image"]?["value"]?["downloadURL"]?.string)
            let onNodeOne = cluster.nodes[0].baseURL + String(downloadURL.dropFirst(cluster.nodes[1].baseURL.count))
            let downloaded = try await alice.transfer(onNodeOne, method: .GET)
            #expect(downloaded.status == 200)
            #expect(downloaded.bytes == bytes)
            let ranged = try await alice.transfer(onNodeOne, method: .GET, headers: [("Range", "bytes=1048000-1049999")])
            #expect(ranged.status == 206)
            #expect(ranged.bytes == Array(bytes[1_048_000..<1_050_000]))

            // Deleted through node 1, collected by node 2: gone everywhere.
            _ = try await alice.modify("_defaultZone", [op("forceDelete", "p1")])
            let report = try await cluster.nodes[1].collectAssetsNow(now: wallClockMillis() + 7_200_000)
            #expect(report.blobs == 1)
            #expect(try await alice.transfer(onNodeOne, method: .GET).status == 404)
        }
    }
}
