import Foundation
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// `Expect: 100-continue`, as curl sends it before a large body: the server answers
/// `100 Continue` once the request may proceed, or its final answer instead, before the body.
/// These tests are the client that waits: nothing of the body is sent before the 100.
@Suite("Expect: 100-continue")
struct ExpectContinueTests {
    static let interim = "HTTP/1.1 100 Continue\r\n\r\n"

    /// Sends a head with `Expect: 100-continue` to `target`, waits for `100 Continue`, sends
    /// the body, and returns the final response (the text after the 100).
    static func sendWaitingForContinue(
        _ method: String, _ target: String, body: [UInt8], port: Int, headers: [String] = []
    ) async throws -> RawConnection.Snapshot {
        let connection = try await RawConnection.open(port: port)
        defer { Task { await connection.close() } }
        try await connection.send(
            "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(body.count)\r\n"
                + "Expect: 100-continue\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n")
        // Minutes, not seconds: under the whole suite's load on 2 cores a PostgreSQL write can
        // take over 10 s (the default wait); a lost 100 or answer still fails the test.
        let continued = try await connection.wait(for: "100 Continue", timeout: .seconds(120)) {
            $0.text.utf8.count >= interim.utf8.count
        }
        #expect(continued.text.hasPrefix(interim), "the first answer must be the 100: \(continued.text.prefix(200))")
        try await connection.send(body)
        let final = try await connection.wait(for: "the final response", timeout: .seconds(120)) { snapshot in
            Self.finalResponse(snapshot)?.isComplete == true
        }
        return try #require(Self.finalResponse(final)?.snapshot)
    }

    /// The response after the `100 Continue`, and whether all of its body arrived.
    static func finalResponse(_ snapshot: RawConnection.Snapshot) -> (snapshot: RawConnection.Snapshot, isComplete: Bool)? {
        guard snapshot.text.hasPrefix(interim) else { return nil }
        let rest = RawConnection.Snapshot(received: Array(snapshot.received.dropFirst(interim.utf8.count)), closed: snapshot.closed)
        guard rest.hasHead else { return nil }
        let length = rest.header("content-length").flatMap { Int($0) } ?? 0
        let headLength = rest.text.range(of: "\r\n\r\n").map { rest.text[..<$0.upperBound].utf8.count } ?? 0
        return (rest, rest.received.count - headLength >= length)
    }

    @Test(arguments: Engine.available) func anAuthenticatedRequestGets100ContinueThenItsAnswer(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let body = JSON.object(["zoneID": ["zoneName": "Z"], "operations": [op("create", "r", fields: ["n": 1])]])
                .serializedBytes()
            let reply = try await Self.sendWaitingForContinue(
                "POST", RequestLimitsTests.apiPath("private", "records/modify", alice), body: body, port: server.server.port,
                headers: ["Content-Type: application/json"])
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.json?["records"]?.array?.first?["recordName"] == "r")
            #expect(try await alice.lookup("r", zone: "Z").records.first?["fields"]?["n"]?["value"] == 1)
        }
    }

    /// curl's case: a large asset upload waits for the 100 rather than a second.
    @Test(arguments: Engine.available) func anAssetUploadGets100ContinueThenStoresTheBytes(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let (_, slot) = try await alice.requestUpload(record: "p", field: "image")
            let url = try #require(slot)
            let target = String(url.dropFirst(server.server.baseURL.count))
            let bytes = testBytes(300_000, seed: 5)
            let reply = try await Self.sendWaitingForContinue("POST", target, body: bytes, port: server.server.port)
            #expect(reply.status == 200, "\(reply.text.prefix(300))")
            #expect(reply.json?["singleFile"]?["size"]?.int64 == 300_000)
        }
    }

    /// Refused on its head (credentials, announced size, quota): the final answer comes instead
    /// of the 100, and the body is never asked for.
    @Test(arguments: Engine.available) func aRequestRefusedOnItsHeadGetsTheFinalAnswerInsteadOf100(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.userQuotaBytes = 10_000 }) { server in
            let alice = try await server.user("alice")
            let port = server.server.port
            let (_, slot) = try await alice.requestUpload(record: "big", field: "image")
            let upload = String(try #require(slot).dropFirst(server.server.baseURL.count))
            let cases: [(String, String, Int, String)] = [
                (RequestLimitsTests.apiPath("private", "records/modify") + "?ckAPIToken=nope", "POST", 1 << 20, "AUTHENTICATION_FAILED"),
                (RequestLimitsTests.apiPath("private", "zones/lookup", alice), "POST", 2 << 20, "LIMIT_EXCEEDED"),
                (upload, "POST", 50_000, "QUOTA_EXCEEDED"),
            ]
            for (target, method, length, code) in cases {
                let connection = try await RawConnection.open(port: port)
                try await connection.send(
                    "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(length)\r\n"
                        + "Expect: 100-continue\r\n\r\n")
                let reply = try await connection.waitForResponse(timeout: .seconds(120))
                #expect(!reply.text.contains("100 Continue"), "\(code): \(reply.text.prefix(200))")
                #expect(reply.json?["serverErrorCode"]?.string == code, "\(reply.text.prefix(300))")
                try await connection.waitForClose(timeout: .seconds(120))
            }
            try await HostileRequestTests.expectServing(server)
        }
    }

    /// HTTP/1.0 has no 1xx answers: such a client gets its answer alone.
    @Test func anHTTP10ClientGetsNo100() async throws {
        try await TestServer.with { server in
            let alice = try await server.user("alice")
            let port = server.server.port
            let body = JSON.object(["zones": [["zoneName": "_defaultZone"]]]).serializedBytes()
            for version in ["HTTP/1.0"] {
                let connection = try await RawConnection.open(port: port)
                try await connection.send(
                    "POST \(RequestLimitsTests.apiPath("private", "zones/lookup", alice)) \(version)\r\nHost: 127.0.0.1\r\n"
                        + "Content-Length: \(body.count)\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
                        + String(decoding: body, as: UTF8.self))
                let reply = try await connection.waitForResponse(timeout: .seconds(120))
                #expect(reply.status == 200, "\(version): \(reply.text.prefix(200))")
                #expect(!reply.text.contains("100 Continue"), "\(version): \(reply.text.prefix(200))")
                await connection.close()
            }
        }
    }
}
