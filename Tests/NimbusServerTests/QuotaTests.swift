import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Quotas on a database's bytes (records + the assets they reference): per user on private
/// databases, per container on the public database.
@Suite("Quotas")
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

            // A file that alone would take the database over is refused before its bytes are read.
            let (_, slot) = try await alice.requestUpload(record: "b", field: "image")
            let early = try await alice.transfer(try #require(slot), bytes: testBytes(6000, seed: 2))
            #expect(early.status == 413, "\(early.status)")
            #expect(early.serverErrorCode == "QUOTA_EXCEEDED")
            #expect(try await server.server.store.usage(of: database) == afterFirst)

            let big = String(repeating: "x", count: 5000)
            let refused = try await alice.modify(
                "_defaultZone",
                [op("create", "b", fields: ["title": .string(big)]), assetOp("create", "c", ["title": ("t", "STRING")])])
            #expect(refused.status == 413)
            #expect(refused.serverErrorCode == "QUOTA_EXCEEDED")
            #expect(refused.reason.contains("quota is 10000 bytes"), "\(refused.reason)")
            // Nothing of the request was written.
            #expect(try await server.server.store.usage(of: database) == afterFirst)
            #expect(try await alice.lookup("c").records.first?["serverErrorCode"]?.string == "NOT_FOUND")

            // A delete frees the space at once (before any collection) and the save goes through.
            _ = try await alice.modify("_defaultZone", [op("forceDelete", "a")])
            #expect(try await server.server.store.usage(of: database).totalBytes == 0)
            let second = try await alice.uploadAsset(testBytes(6000, seed: 2), record: "b", field: "image")
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
            // `nimbus user show` reports the counter, and the quota it is given.
            let shown = try Self.nimbus(
                ["user", "show", "alice", "--container", TestServer.container, "--user-quota-bytes", "10000"],
                data: directory)
            #expect(shown["userRecordName"]?.string == alice.userRecordName)
            #expect(shown["development"]?["assetBytes"]?.int64 == 6000, "\(shown)")
            #expect(shown["development"]?["quotaBytes"]?.int64 == 10_000)
            let total = try #require(shown["development"]?["totalBytes"]?.int64)
            #expect(shown["development"]?["remainingBytes"]?.int64 == 10_000 - total)
            #expect(shown["production"]?["totalBytes"]?.int64 == 0)
        }
    }

    /// The public database is held to the container's quota: records and assets, whoever
    /// writes them; private databases are not.
    @Test(arguments: Engine.available) func thePublicDatabaseCountsAgainstTheContainerQuota(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.containerQuotaBytes = 10_000 }) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            let publicDatabase = DatabaseKey(
                container: TestServer.container, environment: .development, scope: .public, owner: DatabaseKey.publicOwner)
            let first = try await alice.uploadAsset(testBytes(6000, seed: 1), record: "a", field: "image", scope: "public")
            let saved = try await alice.modify(
                "_defaultZone", [assetOp("create", "a", ["image": (first, "ASSETID")])], scope: "public")
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            let afterFirst = try await server.server.store.usage(of: publicDatabase)
            #expect(afterFirst.assetBytes == 6000)

            // Another user's file that would take the container's public database over is
            // refused before its bytes are read; a save that would is refused whole.
            let (_, slot) = try await bob.requestUpload(record: "b", field: "image", scope: "public")
            let early = try await bob.transfer(try #require(slot), bytes: testBytes(6000, seed: 2))
            #expect(early.status == 413 && early.serverErrorCode == "QUOTA_EXCEEDED", "\(early.status)")
            let big = String(repeating: "x", count: 5000)
            let refused = try await bob.modify(
                "_defaultZone",
                [op("create", "b", fields: ["title": .string(big)]), assetOp("create", "c", ["title": ("t", "STRING")])],
                scope: "public")
            #expect(refused.status == 413)
            #expect(refused.serverErrorCode == "QUOTA_EXCEEDED")
            #expect(refused.reason.contains("quota is 10000 bytes"), "\(refused.reason)")
            #expect(try await server.server.store.usage(of: publicDatabase) == afterFirst)
            #expect(try await bob.lookup("c", scope: "public").records.first?["serverErrorCode"]?.string == "NOT_FOUND")

            // Private databases have no quota here.
            let own = try await bob.uploadAsset(testBytes(12_000, seed: 3), record: "x", field: "image")
            let ownSaved = try await bob.modify("_defaultZone", [assetOp("create", "x", ["image": (own, "ASSETID")])])
            #expect(ownSaved.records.first?["serverErrorCode"] == nil, "\(ownSaved.text)")

            // Alice's delete frees the space at once; Bob's save then fits.
            _ = try await alice.modify("_defaultZone", [op("forceDelete", "a")], scope: "public")
            #expect(try await server.server.store.usage(of: publicDatabase) == .empty)
            let second = try await bob.uploadAsset(testBytes(6000, seed: 2), record: "b", field: "image", scope: "public")
            let retried = try await bob.modify(
                "_defaultZone", [assetOp("create", "b", ["image": (second, "ASSETID")])], scope: "public")
            #expect(retried.records.first?["serverErrorCode"] == nil, "\(retried.text)")

            guard case .sqlite(let directory) = server.storage else { return }
            // `nimbus container show` reports the public database's counter.
            let shown = try Self.nimbus(
                ["container", "show", TestServer.container, "--container-quota-bytes", "10000"], data: directory)
            #expect(shown["development"]?["assetBytes"]?.int64 == 6000, "\(shown)")
            #expect(shown["development"]?["quotaBytes"]?.int64 == 10_000)
            #expect(shown["production"]?["totalBytes"]?.int64 == 0)
        }
    }

    /// Runs the `nimbus` CLI on a data directory with `--json` and parses what it prints.
    static func nimbus(_ arguments: [String], data directory: String) throws -> JSON {
        let process = try ChildProcess(
            executable: ServeProcess.executable().path, arguments: arguments + ["--data", directory, "--json"],
            output: .pipe)
        let data = process.standardOutput?.readDataToEndOfFile() ?? Data()
        process.waitUntilExit()
        return try JSON.parse(Array(data))
    }
}
