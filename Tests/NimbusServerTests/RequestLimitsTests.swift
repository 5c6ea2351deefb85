import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// What a client can hold of the server: bodies are bounded per operation and refused before
/// they are read, authentication comes before the body, and connections that make no
/// progress (a half-sent head, a stalled body, an idle keep-alive) are closed, while push
/// sockets and long polls live on. Timeouts are short here, set by configuration; every wait
/// ends on the awaited event or fails after a bounded time.
@Suite("Request limits and connection timeouts")
struct RequestLimitsTests {
    static let fiftyMegabytes = 50 << 20

    static func apiPath(_ scope: String, _ operation: String, _ client: TestClient? = nil) -> String {
        var path = "/database/1/\(TestServer.container)/development/\(scope)/\(operation)"
        if let client, let apiToken = client.apiToken {
            path += "?ckAPIToken=\(apiToken)"
            if let webAuthToken = client.webAuthToken { path += "&ckWebAuthToken=\(webAuthToken)" }
        }
        return path
    }

    static func post(_ path: String, port: Int, headers: [String]) -> String {
        "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
            + headers.map { $0 + "\r\n" }.joined() + "\r\n"
    }

    @Test(arguments: Engine.available) func anUnauthenticatedUploadIsRefusedBeforeItsBodyIsSent(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let port = server.server.port
            // 50 MB is within records/modify's limit: the answer comes from authentication,
            // which needs no body.
            let connection = try await RawConnection.open(port: port)
            try await connection.send(
                Self.post(Self.apiPath("public", "records/modify"), port: port, headers: ["Content-Length: \(Self.fiftyMegabytes)"]))
            let reply = try await connection.waitForResponse()
            #expect(reply.status == 421)
            #expect(reply.json?["serverErrorCode"] == "AUTHENTICATION_REQUIRED")
            #expect(reply.header("connection")?.lowercased() == "close")
            try await connection.waitForClose()

            // A wrong token: the same, without a byte of the body.
            let wrong = try await RawConnection.open(port: port)
            try await wrong.send(
                Self.post(
                    Self.apiPath("public", "records/modify") + "?ckAPIToken=nope", port: port,
                    headers: ["Content-Length: \(Self.fiftyMegabytes)"]))
            #expect(try await wrong.waitForResponse().json?["serverErrorCode"] == "AUTHENTICATION_FAILED")
            try await wrong.waitForClose()
            try await HostileRequestTests.expectServing(server)
        }
    }

    @Test(arguments: Engine.available) func aBodyAnnouncedOverTheOperationsLimitIsRefusedUpFront(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let port = server.server.port
            let connection = try await RawConnection.open(port: port)
            try await connection.send(
                Self.post(
                    Self.apiPath("private", "records/lookup", alice), port: port,
                    headers: ["Content-Length: \(Self.fiftyMegabytes)"]))
            let reply = try await connection.waitForResponse()
            #expect(reply.status == 400)
            #expect(reply.json?["serverErrorCode"] == "LIMIT_EXCEEDED")
            let reason = reply.json?["reason"]?.string ?? ""
            #expect(reason.contains("records/lookup") && reason.contains("\(1 << 20)"), "\(reason)")
            try await connection.waitForClose()

            // The server's ceiling caps records/modify's own (larger) limit.
            try await TestServer.with(engine, configure: { $0.maxBodyBytes = 1000 }) { small in
                let bob = try await small.user("bob")
                let reply = try await bob.postRaw("records/modify", String(repeating: " ", count: 1001) + "{}")
                #expect(reply.status == 400)
                #expect(reply.serverErrorCode == "LIMIT_EXCEEDED")
                #expect(reply["reason"]?.string?.contains("1000") == true)
                // At the limit it is read.
                #expect(try await bob.postRaw("zones/list", String(repeating: " ", count: 998) + "{}").status == 200)
            }
        }
    }

    @Test(arguments: Engine.available) func aChunkedBodyIsCutOffAtTheLimit(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let port = server.server.port
            let connection = try await RawConnection.open(port: port)
            try await connection.send(
                Self.post(Self.apiPath("private", "records/lookup", alice), port: port, headers: ["Transfer-Encoding: chunked"]))
            // 1 MiB + 64 KiB in 64 KiB chunks, and no last chunk: the server stops at the limit.
            let chunk = Array("10000\r\n".utf8) + [UInt8](repeating: 0x20, count: 1 << 16) + Array("\r\n".utf8)
            for _ in 0..<17 { try await connection.send(chunk) }
            let reply = try await connection.waitForResponse()
            #expect(reply.status == 400)
            #expect(reply.json?["serverErrorCode"] == "LIMIT_EXCEEDED")
            try await connection.waitForClose()
        }
    }

    @Test(arguments: Engine.available) func aBodyThatEndsEarlyIsReportedAsSuch(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let port = server.server.port
            let connection = try await RawConnection.open(port: port)
            try await connection.send(
                Self.post(Self.apiPath("private", "records/lookup", alice), port: port, headers: ["Content-Length: 100"])
                    + #"{"records": "#)
            try await connection.finishSending()
            let reply = try await connection.waitForResponse()
            #expect(reply.status == 400)
            let reason = reply.json?["reason"]?.string ?? ""
            #expect(!reason.contains("larger"), "\(reason)")
            #expect(reason.contains("end"), "\(reason)")
        }
    }

    @Test(arguments: Engine.available) func aHalfSentHeadIsClosedAfterTheHeaderTimeout(engine: Engine) async throws {
        // Long enough that the probe's own connection (subject to the same timeout) sends its
        // request in time on a loaded machine; short enough for a test.
        try await TestServer.with(engine, configure: { $0.connections.headerTimeout = .seconds(2) }) { server in
            let connection = try await RawConnection.open(port: server.server.port)
            try await connection.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            let closed = try await connection.waitForClose(timeout: .seconds(10))
            #expect(closed.received.isEmpty)
            // A connection that sends nothing at all goes the same way.
            let silent = try await RawConnection.open(port: server.server.port)
            try await silent.waitForClose(timeout: .seconds(10))
            try await HostileRequestTests.expectServing(server)
        }
    }

    @Test(arguments: Engine.available) func aStalledBodyIsClosedAfterTheBodyTimeout(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.connections.bodyTimeout = .milliseconds(300) }) { server in
            let alice = try await server.user("alice")
            let port = server.server.port
            let connection = try await RawConnection.open(port: port)
            try await connection.send(
                Self.post(Self.apiPath("private", "records/lookup", alice), port: port, headers: ["Content-Length: 100"])
                    + #"{"records": "#)
            try await connection.waitForClose(timeout: .seconds(10))
            try await HostileRequestTests.expectServing(server)
        }
    }

    @Test(arguments: Engine.available) func anIdleKeepAliveConnectionIsClosed(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.connections.idleTimeout = .milliseconds(300) }) { server in
            let connection = try await RawConnection.open(port: server.server.port)
            try await connection.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let reply = try await connection.waitForResponse()
            #expect(reply.status == 200)
            #expect(reply.header("connection") == nil)
            try await connection.waitForClose(timeout: .seconds(10))
        }
    }

    @Test(arguments: Engine.available) func theConnectionOverThePerAddressLimitIsRefusedWhileOthersWork(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.connections.maxConnectionsPerAddress = 3 }) { server in
            let port = server.server.port
            let health = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            var open: [RawConnection] = []
            for _ in 0..<3 {
                let connection = try await RawConnection.open(port: port)
                try await connection.send(health)
                #expect(try await connection.waitForResponse().status == 200)
                open.append(connection)
            }
            let extra = try await RawConnection.open(port: port)
            try await extra.send(health)
            let refused = try await extra.waitForResponse()
            #expect(refused.status == 429)
            #expect(refused.json?["serverErrorCode"] == "THROTTLED")
            try await extra.waitForClose()

            // The three admitted ones still work.
            try await open[0].send(health)
            #expect(try await open[0].wait(for: "a second response") { $0.text.components(separatedBy: "HTTP/1.1 200").count == 3 }
                .closed == false)

            // A closed one frees its place (the server sees the close a moment later).
            await open[1].close()
            let deadline = ContinuousClock.now + .seconds(10)
            var admitted = false
            while !admitted && ContinuousClock.now < deadline {
                let next = try await RawConnection.open(port: port)
                try await next.send(health)
                admitted = try await next.waitForResponse().status == 200
                await next.close()
            }
            #expect(admitted)
            for connection in open { await connection.close() }
        }
    }

    @Test(arguments: Engine.available) func pushSocketsOutliveTheHTTPTimeoutsAndDoNotCountAgainstTheLimit(engine: Engine) async throws {
        try await TestServer.with(
            engine,
            configure: {
                // The idle timeout outlasts the test's pauses, so the client's pooled connection is
                // not closed under a request it is about to reuse (10 s did not: under the whole
                // suite's load a device's upgrade can take longer, and the server's close met the
                // client's next request as remoteConnectionClosed); the header timeout closes the
                // raw connection below.
                $0.connections = ConnectionSettings(
                    headerTimeout: .seconds(1), bodyTimeout: .seconds(1), idleTimeout: .seconds(120),
                    maxConnectionsPerAddress: 2)
            }
        ) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            _ = try await alice.subscribe(zoneSubscription("z", zone: "Z"))
            // Three devices from one address with a limit of two: open devices do not count.
            var devices: [PushTestDevice] = []
            for index in 0..<3 { devices.append(try await PushTestDevice.connect(alice, deviceID: "device-\(index)")) }
            try await server.waitForDevices(3, of: alice)

            // An HTTP connection opened after them times out: the devices have been open longer.
            let idle = try await RawConnection.open(port: server.server.port)
            try await idle.waitForClose(timeout: .seconds(10))

            _ = try await alice.onDevice("phone").modify("Z", [op("create", "a")])
            for device in devices {
                #expect(try await device.next()["ck"]?["fet"]?["zid"] == "Z")
            }
            for device in devices { await device.disconnect() }
        }
    }

    @Test(arguments: Engine.available) func aWebCourierLongPollOutlivesTheIdleTimeout(engine: Engine) async throws {
        try await TestServer.with(
            engine,
            configure: {
                // Short, but not so short that a loaded machine's late read of the request
                // head meets the idle timeout before the poll starts.
                $0.connections.idleTimeout = .seconds(2)
                $0.connections.bodyTimeout = .seconds(2)
                $0.push.courierTimeout = .seconds(3)
            }
        ) { server in
            let alice = try await server.user("alice")
            // Every request on a connection of its own: a pooled client connection idle for the
            // 2 s the suite's load can put between two requests meets the idle timeout as the
            // next request goes out (remoteConnectionClosed).
            let tokens = "/database/1/\(alice.container)/development/tokens/"
            let query = "?ckAPIToken=\(alice.apiToken!)&ckWebAuthToken=\(alice.webAuthToken!)"
            let created = try await Self.postAlone(
                tokens + "create" + query, ["apnsEnvironment": "development"], port: server.server.port)
            let token = try #require(created?["apnsToken"]?.string)
            let courier = try #require(created?["webcourierURL"]?.string)
            let registered = try await Self.postAlone(
                tokens + "register" + query, ["apnsEnvironment": "development", "apnsToken": .string(token)],
                port: server.server.port)
            #expect(registered != nil)
            let path = String(courier.dropFirst(alice.baseURL.count))
            let connection = try await RawConnection.open(port: server.server.port)
            let started = ContinuousClock.now
            try await connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let reply = try await connection.waitForResponse(timeout: .seconds(20))
            #expect(reply.status == 200)
            #expect(reply.header("content-length") == "0")
            #expect(ContinuousClock.now - started >= .seconds(3))
        }
    }

    /// A `POST` of `body` to `path` on a connection opened for it and closed after; the JSON
    /// of a `200` answer, `nil` for any other.
    static func postAlone(_ path: String, _ body: JSON, port: Int) async throws -> JSON? {
        let bytes = body.serializedBytes()
        let connection = try await RawConnection.open(port: port)
        let reply: RawConnection.Snapshot
        do {
            try await connection.send(
                post(path, port: port, headers: ["Content-Length: \(bytes.count)", "Connection: close"]))
            try await connection.send(bytes)
            reply = try await connection.waitForResponse(timeout: .seconds(60))
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
        return reply.status == 200 ? reply.json : nil
    }
}
