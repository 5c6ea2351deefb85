import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import Testing

/// A per-user quota on the private database's bytes (records + the assets they reference).
@Suite("User quota")
struct QuotaTests {
    @Test(arguments: Engine.available) func overQuotaNothingIsWrittenAndADeleteFreesSpaceAtOnce(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.userQuotaBytes = 10_000 }) { server in
            let alice = try await server.user("alice")
            let database = try AssetLifecycleTests.database(alice)
            let first = try await alice.uploadAsset(testBytes(6000, seed: 1), record: "a", field: "image")
            let saved = try await alice.modify("_defaultZone", [assetOp("create", "a", ["image": (first, "ASSETID")])])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            let afterFirst = try await server.server.store.usage(of: database)
            #expect(afterFirst.assetBytes == 6000)
            #expect(afterFirst.recordBytes > 0)

            let second = try await alice.uploadAsset(testBytes(6000, seed: 2), record: "b", field: "image")
            let refused = try await alice.modify(
                "_defaultZone",
                [assetOp("create", "b", ["image": (second, "ASSETID")]), assetOp("create", "c", ["title": ("t", "STRING")])])
            #expect(refused.status == 413)
            #expect(refused.serverErrorCode == "QUOTA_EXCEEDED")
            #expect(refused.reason.contains("quota is 10000 bytes"), "\(refused.reason)")
            // Nothing of the request was written, and the receipt was not spent.
            #expect(try await server.server.store.usage(of: database) == afterFirst)
            #expect(try await alice.lookup("c").records.first?["serverErrorCode"]?.string == "NOT_FOUND")

            // A delete frees the space at once (before any collection) and the save goes through.
            _ = try await alice.modify("_defaultZone", [op("forceDelete", "a")])
            #expect(try await server.server.store.usage(of: database).totalBytes == 0)
            let retried = try await alice.modify("_defaultZone", [assetOp("create", "b", ["image": (second, "ASSETID")])])
            #expect(retried.records.first?["serverErrorCode"] == nil, "\(retried.text)")

            // An asset two records hold counts once.
            let stored: JSON = ["fileChecksum": .string(checksum(testBytes(6000, seed: 2))), "size": 6000]
            let shared = try await alice.modify("_defaultZone", [assetOp("create", "d", ["image": (stored, "ASSET")])])
            #expect(shared.records.first?["serverErrorCode"] == nil, "\(shared.text)")
            #expect(try await server.server.store.usage(of: database).assetBytes == 6000)

            // Another user's database has its own quota.
            let bob = try await server.user("bob")
            let bobs = try await bob.uploadAsset(testBytes(9000, seed: 3), record: "x", field: "image")
            let bobSaved = try await bob.modify("_defaultZone", [assetOp("create", "x", ["image": (bobs, "ASSETID")])])
            #expect(bobSaved.records.first?["serverErrorCode"] == nil, "\(bobSaved.text)")

            guard case .sqlite(let directory) = server.storage else { return }
            // `nimbus user show` reports the bytes.
            let process = Process()
            process.executableURL = try ServeProcess.executable()
            process.arguments = ["user", "show", "alice", "--container", TestServer.container, "--data", directory, "--json"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let shown = try JSON.parse(Array(data))
            #expect(shown["userRecordName"]?.string == alice.userRecordName)
            #expect(shown["development"]?["assetBytes"]?.int64 == 6000, "\(String(decoding: data, as: UTF8.self))")
            #expect(shown["production"]?["totalBytes"]?.int64 == 0)
        }
    }
}
