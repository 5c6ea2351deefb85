import Foundation
import NIOHTTP1
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `nimbus assets migrate`, the real command beside a serving server: it copies every blob to
/// the new location, a second run copies nothing again, `--delete-source` empties the old
/// location of what the new one holds, and a server restarted on the new location serves the
/// same download URLs.
@Suite("nimbus assets migrate")
struct AssetsMigrateCommandTests {
    /// Runs `nimbus assets migrate ARGUMENTS`; its exit status and standard output.
    static func migrate(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let child = try ChildProcess(
            executable: ServeProcess.executable().path, arguments: ["assets", "migrate"] + arguments, output: .pipe,
            error: .discard)
        let output = String(decoding: child.standardOutput?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        return (child.waitUntilExit(), output)
    }

    /// `location` as `--from`/`--to` take it.
    static func argument(_ location: AssetLocation) -> String {
        switch location {
        case .engineDefault: return "default"
        case .directory(let path): return "file://" + path
        case .objectStore(let store): return store.description
        }
    }

    @Test func copiesWhileServingThenTheServerMovesToTheNewLocation() async throws {
        try await TestServer.with(.sqlite) { server in
            guard case .sqlite(let data) = server.storage else { throw TestFailure("not SQLite storage") }
            let target = (server.directory as NSString).appendingPathComponent("moved")
            let from = Self.argument(server.harness.configuration.assets.location)
            let alice = try await server.user("alice")
            let bytes = testBytes(1_500_000, seed: 17)
            let url = try await ObjectStoreAssetTests.saved(bytes, as: "m", by: alice)

            let first = try Self.migrate(["--data", data, "--from", from, "--to", "file://" + target])
            #expect(first.status == 0, "\(first.output)")
            #expect(first.output.contains("copied 1 blobs (1500000 bytes), 0 already there"), "\(first.output)")
            let again = try Self.migrate(["--data", data, "--from", from, "--to", "file://" + target, "--delete-source"])
            #expect(again.output.contains("copied 0 blobs (0 bytes), 1 already there, deleted 1 from the source"), "\(again.output)")
            #expect(try await alice.transfer(url, method: .GET).status == 404, "gone from the old location")

            // The same node restarted on the new location serves the same URL.
            try await server.harness.restart { $0.assets.location = .directory(target) }
            let fetched = try await alice.transfer(url, method: .GET)
            #expect(fetched.status == 200)
            #expect(fetched.bytes == bytes)
        }
    }

    @Test func aLocationThatNamesNothingIsRefused() throws {
        let refused = try Self.migrate(["--data", "/nonexistent", "--to", "ftp://x"])
        #expect(refused.status != 0)
    }
}
