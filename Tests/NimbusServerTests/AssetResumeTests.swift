import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// An upload whose connection drops keeps every byte that reached the server, on either
/// engine (on PostgreSQL: the whole chunks stored as they arrived, and the partial one after
/// them), so the client resumes from there and sends nothing twice.
@Suite("Asset resume after a dropped connection")
struct AssetResumeTests {
    @Test(arguments: Engine.available) func aDroppedPostKeepsEveryByteThatArrived(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let url = try #require(try await alice.requestUpload(record: "movie", field: "video").url)
            let path = try #require(URL(string: url)?.path)
            // Two whole 1 MiB chunks and part of a third, of a 3.5 MB file.
            let bytes = testBytes(3_500_000, seed: 41)
            let sent = 2_600_000
            let connection = try await RawConnection.open(port: server.server.port)
            try await connection.send("POST \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(bytes.count)\r\n\r\n")
            try await connection.send(Array(bytes[0..<sent]))
            // Dropped without a word: no half-close, no answer awaited.
            await connection.close()

            // The status waits for the dropped request to finish storing; until the server has
            // even seen that request, it may answer less: ask until it holds all, or give up.
            var received: Int64 = -1
            let deadline = ContinuousClock.now + .seconds(20)
            while received < Int64(sent), ContinuousClock.now < deadline {
                received = try await alice.transfer(url, method: .GET).json["receivedBytes"]?.int64 ?? -1
            }
            #expect(received == Int64(sent), "the server kept \(received) of the \(sent) bytes that reached it")

            let rest = try await alice.transfer(
                url, method: .PUT, bytes: Array(bytes[Int(received)...]),
                headers: [("Content-Range", "bytes \(received)-\(bytes.count - 1)/\(bytes.count)")])
            #expect(rest.status == 200, "\(rest.json)")
            let singleFile = try #require(rest.json["singleFile"])
            #expect(singleFile["fileChecksum"]?.string == checksum(bytes))
            let saved = try await alice.modify("_defaultZone", [assetOp("create", "movie", ["video": (singleFile, "ASSETID")])])
            let downloadURL = try #require(saved.records.first?["fields"]?["video"]?["value"]?["downloadURL"]?.string)
            #expect(try await alice.transfer(downloadURL, method: .GET).bytes == bytes)
        }
    }
}
