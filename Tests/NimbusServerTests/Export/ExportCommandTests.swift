import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `nimbus export` (docs/OPERATIONS.md, "Exporting a container"), the command itself on both
/// engines while the server runs: every database's zones and records in CloudKit's record form,
/// one JSON Lines file per zone, and each asset file once, byte for byte.
@Suite("nimbus export")
struct ExportCommandTests {
    /// Runs `nimbus export` on the server's storage; its standard output (`--json`) and status.
    static func export(_ server: TestServer, arguments: [String]) throws -> (status: Int32, output: String) {
        var storage: [String] = []
        switch server.storage {
        case .sqlite(let directory): storage = ["--data", directory]
        case .postgres(let url, let schema): storage = ["--postgres", url, "--postgres-schema", schema]
        }
        switch server.harness.configuration.assets.location {
        case .engineDefault: break
        case .directory(let path): storage += ["--asset-directory", path]
        case .objectStore(let location): storage += ["--assets", location.description]
        }
        let process = try ChildProcess(
            executable: ServeProcess.executable().path, arguments: ["export"] + arguments + storage + ["--json"],
            output: .pipe, error: .discard)
        let output = process.standardOutput?.readDataToEndOfFile() ?? Data()
        return (process.waitUntilExit(), String(decoding: output, as: UTF8.self))
    }

    @Test(arguments: Engine.available) func writesZonesRecordsAndAssetFilesOfEveryDatabase(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let aliceName = try #require(alice.userRecordName)
            let bytes = testBytes(300_000, seed: 3)
            _ = try await alice.createZone("Album")
            let singleFile = try await alice.uploadAsset(bytes, zone: "Album", record: "p1", field: "image")
            _ = try await alice.modify(
                "Album", [assetOp("create", "p1", ["image": (singleFile, "ASSETID"), "title": ("Cat", "STRING")])])
            _ = try await alice.modify("Album", [op("create", "p2", "Photo", fields: ["title": "Dog"])])
            _ = try await alice.modify("Album", [op("create", "gone", "Photo", fields: ["title": "Gone"])])
            _ = try await alice.modify("Album", [op("forceDelete", "gone", "Photo")])
            _ = try await bob.modify("_defaultZone", [op("create", "note", "Note", fields: ["text": "Hello"])])
            _ = try await bob.modify("_defaultZone", [op("create", "board", "Post", fields: ["text": "Public"])], scope: "public")

            let out = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-export-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: out) }
            let (status, output) = try Self.export(server, arguments: ["--container", TestServer.container, "--out", out.path])
            #expect(status == 0, "\(output)")
            let summary = try JSON.parse(output)
            #expect(summary["assets"] == 1)
            #expect(summary["assetBytes"]?.int64 == Int64(bytes.count))

            // Alice's zone: one line a live record, in the record form `records/lookup` returns.
            let alices = out.appendingPathComponent("development/private").appendingPathComponent(aliceName)
            let lines = try String(contentsOf: alices.appendingPathComponent("records/Album.jsonl"), encoding: .utf8)
                .split(separator: "\n").map { try JSON.parse(String($0)) }
            #expect(lines.compactMap { $0["recordName"]?.string }.sorted() == ["p1", "p2"])
            let p1 = try #require(lines.first { $0["recordName"] == "p1" })
            #expect(p1["recordType"] == "Photo")
            #expect(p1["fields"]?["title"]?["value"] == "Cat")
            #expect(p1["zoneID"]?["zoneName"] == "Album")
            #expect(p1["zoneID"]?["ownerRecordName"]?.string == aliceName)
            #expect(p1["recordChangeTag"]?.string != nil)
            let checksum = try #require(p1["fields"]?["image"]?["value"]?["fileChecksum"]?.string)
            let hash = try #require(Asset.sha256Hex(ofFileChecksum: checksum))
            #expect(try Data(contentsOf: alices.appendingPathComponent("assets").appendingPathComponent(hash)) == Data(bytes))
            let zones = try JSON.parse(String(contentsOf: alices.appendingPathComponent("zones.json"), encoding: .utf8))
            #expect(zones.array?.compactMap { $0["zoneID"]?["zoneName"]?.string }.contains("Album") == true)

            // Bob's default zone and the public database (with the user records the server made).
            let bobs = try String(
                contentsOf: out.appendingPathComponent("development/private").appendingPathComponent(try #require(bob.userRecordName))
                    .appendingPathComponent("records/_defaultZone.jsonl"), encoding: .utf8)
            #expect(bobs.contains("\"Hello\""))
            let board = try String(contentsOf: out.appendingPathComponent("development/public/records/_defaultZone.jsonl"), encoding: .utf8)
            #expect(board.contains("\"Public\""))
            let manifest = try JSON.parse(String(contentsOf: out.appendingPathComponent("export.json"), encoding: .utf8))
            #expect(manifest["container"]?.string == TestServer.container)
            #expect(manifest["databases"]?.array?.count == 3)

            // Into a directory that holds files, or of a container the server does not have: a
            // clear error, nothing written.
            let again = try Self.export(server, arguments: ["--container", TestServer.container, "--out", out.path])
            #expect(again.status != 0)
            let unknown = out.deletingLastPathComponent().appendingPathComponent("nimbus-export-\(UUID().uuidString)")
            let missing = try Self.export(server, arguments: ["--container", "iCloud.no.such", "--out", unknown.path])
            #expect(missing.status != 0)
            #expect(!FileManager.default.fileExists(atPath: unknown.path))
        }
    }
}
