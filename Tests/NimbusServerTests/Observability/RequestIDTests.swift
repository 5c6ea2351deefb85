import Logging
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// `X-Request-ID` on every response, the error body's `uuid`, and the `request_id` of log lines.
@Suite("Request IDs")
struct RequestIDTests {
    struct Answer {
        var status: Int
        var requestID: String?
        var json: JSON
    }

    static func send(_ url: String, method: HTTPMethod = .POST, body: String? = "{}", requestID: String? = nil) async throws
        -> Answer
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let requestID { request.headers.add(name: "X-Request-ID", value: requestID) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Answer(
            status: Int(response.status.code), requestID: response.headers.first(name: "X-Request-ID"),
            json: (try? JSON.parse(Array(bytes.readableBytesView))) ?? .null)
    }

    static func isServerMade(_ id: String?) -> Bool {
        guard let id, id.count == 32 else { return false }
        return id.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    @Test func everyResponseCarriesARequestIDAndErrorsUseItAsTheirUUID() async throws {
        try await TestServer.with { server in
            let alice = try await server.user("alice")
            let ok = try await Self.send(alice.url("private", "users/current"), method: .GET, body: nil)
            #expect(ok.status == 200)
            #expect(Self.isServerMade(ok.requestID), "\(ok.requestID ?? "none")")

            let failed = try await Self.send(alice.url("private", "records/modify"), body: #"{"operations": 7}"#)
            #expect(failed.status == 400)
            #expect(Self.isServerMade(failed.requestID))
            #expect(failed.json["uuid"]?.string == failed.requestID)

            let unknownRoute = try await Self.send("\(server.server.baseURL)/no/such/route", method: .GET, body: nil)
            #expect(unknownRoute.status == 404)
            #expect(Self.isServerMade(unknownRoute.requestID))

            let health = try await Self.send("\(server.server.baseURL)/health", method: .GET, body: nil)
            #expect(Self.isServerMade(health.requestID))
            #expect(Set([ok.requestID, failed.requestID, unknownRoute.requestID, health.requestID]).count == 4)
        }
    }

    @Test func aUsableClientRequestIDIsKeptAndAnyOtherReplaced() async throws {
        try await TestServer.with { server in
            let alice = try await server.user("alice")
            let url = alice.url("private", "records/modify")
            let mine = "sync-7f3a.retry_2"
            let kept = try await Self.send(url, body: #"{"operations": 7}"#, requestID: mine)
            #expect(kept.requestID == mine)
            #expect(kept.json["uuid"]?.string == mine, "the error report names the client's ID")

            let longest = String(repeating: "a", count: 64)
            #expect(try await Self.send(url, requestID: longest).requestID == longest)
            for refused in [String(repeating: "a", count: 65), "has space", "semi;colon", "ünïcode", "x\"y"] {
                let answer = try await Self.send(url, requestID: refused)
                #expect(answer.requestID != refused)
                #expect(Self.isServerMade(answer.requestID), "\(refused) → \(answer.requestID ?? "none")")
            }
        }
    }

    @Test func logLinesOfARequestCarryItsID() async throws {
        let recorder = LineRecorder()
        try await TestServer.with(logger: recorder.logger(level: .debug)) { server in
            let alice = try await server.user("alice")
            let answer = try await Self.send(
                alice.url("private", "records/lookup"), body: #"{"records": []}"#, requestID: "trace-me-1")
            #expect(answer.status == 200)
            let handled = recorder.recorded.filter { $0.contains("request handled") && $0.contains("request_id=trace-me-1") }
            #expect(handled.count == 1, "\(recorder.recorded)")
            #expect(handled.first?.contains("operation=records/lookup") == true)
            #expect(handled.first?.contains("status=200") == true)
        }
    }
}
