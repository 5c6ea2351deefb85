import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// Requests no well-behaved client sends, on a real server over raw sockets: each gets an
/// answer (or a closed connection) and the server keeps serving. A trap anywhere in the
/// server ends the test process, so every case here is also a crash test.
@Suite("Hostile requests never crash the server")
struct HostileRequestTests {
    /// Query strings a hand-written parser trips over: empty names, empty pairs, broken
    /// percent escapes, partial UTF-8.
    static let hostileQueries = [
        "?=", "?&&", "?%", "?a=%zz", "?=&=", "?==", "?&=&", "?%zz=1", "?ckAPIToken=%", "?%ff%fe=%c3",
        "?a=%e2%82", "?", "?=x", "?ckAPIToken", "?deviceID=&deviceID", "?+=+", "?a=b=c&&=",
    ]

    /// Request targets around the push path.
    static let hostileTargets = [
        "?=", "?", "*", "//", "/push", "/push/", "/push//", "/push///", "/push/a/b/c", "/push/%zz/development",
        "/push/c/%00", "/webcourier/", "/webcourier/%zz", "/database/1/%zz/development/private/records/query",
    ]

    static func upgrade(_ target: String, port: Int) -> String {
        "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    }

    static func get(_ target: String, port: Int) -> String {
        "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n"
    }

    /// The server still answers a health check on a new connection.
    static func expectServing(_ server: TestServer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let connection = try await RawConnection.open(port: server.server.port)
        try await connection.send(get("/health", port: server.server.port))
        let reply = try await connection.waitForResponse()
        #expect(reply.status == 200, sourceLocation: sourceLocation)
        await connection.close()
    }

    @Test(arguments: Engine.available) func hostileQueryStringsOnThePushPathAreAnsweredNotFatal(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let port = server.server.port
            let path = "/push/\(TestServer.container)/development"
            for query in Self.hostileQueries {
                for request in [Self.get(path + query, port: port), Self.upgrade(path + query, port: port)] {
                    let connection = try await RawConnection.open(port: port)
                    try await connection.send(request)
                    let reply = try await connection.waitForResponse()
                    // A plain GET gets the JSON error; an upgrade is accepted and closed with the reason.
                    #expect([101, 400, 401, 421].contains(reply.status ?? 0), "\(query): \(reply.text.prefix(200))")
                    await connection.close()
                }
            }
            // The API path parses its query with the same parser.
            for query in Self.hostileQueries {
                let connection = try await RawConnection.open(port: port)
                try await connection.send(
                    Self.get("/database/1/\(TestServer.container)/development/public/zones/list" + query, port: port))
                let reply = try await connection.waitForResponse()
                #expect([400, 401, 421].contains(reply.status ?? 0), "\(query): \(reply.text.prefix(200))")
                await connection.close()
            }
            try await Self.expectServing(server)
        }
    }

    @Test(arguments: Engine.available) func hostileRequestTargetsAreAnsweredNotFatal(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let port = server.server.port
            for target in Self.hostileTargets {
                for request in [Self.get(target, port: port), Self.upgrade(target, port: port)] {
                    let connection = try await RawConnection.open(port: port)
                    try await connection.send(request)
                    // An answer, or a closed connection for what the HTTP parser refuses outright.
                    do {
                        let reply = try await connection.wait(
                            for: "an answer or a close to \(request.debugDescription)", timeout: .seconds(3)
                        ) { $0.hasHead || $0.closed }
                        #expect(reply.status != 500, "\(target): \(reply.text.prefix(200))")
                    } catch {
                        Issue.record(error)
                    }
                    await connection.close()
                }
            }
            try await Self.expectServing(server)
        }
    }

    /// From a trusted proxy (the test client, on loopback), forwarding headers name the origin
    /// of URLs in answers, when they hold one; docs/SECURITY.md.
    @Test(arguments: Engine.available) func forwardedHeadersNameTheOriginOnlyWhenTheyHoldOne(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.origin.trustedProxies = [try! AddressRange("127.0.0.1")] }) { server in
            let alice = try await server.user("alice")
            let url = "\(alice.baseURL)/database/1/\(alice.container)/development/tokens/create"
                + "?ckAPIToken=\(alice.apiToken!)&ckWebAuthToken=\(alice.webAuthToken!)"
            func courierURL(_ headers: [(String, String)]) async throws -> String {
                let reply = try await alice.send(url, method: .POST, body: Array("{}".utf8), headers: headers)
                return reply["webcourierURL"]?.string ?? "(\(reply.status) \(reply.text))"
            }
            // A list: the last element is the one the trusted proxy wrote; the client wrote the others.
            let listed = try await courierURL([
                ("X-Forwarded-Host", "evil.example, sync.example.com"), ("X-Forwarded-Proto", "http, https"),
            ])
            #expect(listed.hasPrefix("https://sync.example.com/webcourier/"), "\(listed)")
            // What is not a scheme or an authority is ignored for the request's own.
            for (name, value) in [
                ("X-Forwarded-Host", "evil.example/phish?x="), ("X-Forwarded-Host", "user@evil.example"),
                ("X-Forwarded-Host", ""), ("X-Forwarded-Host", ","), ("X-Forwarded-Proto", "javascript"),
            ] {
                let origin = try await courierURL([(name, value)])
                #expect(origin.hasPrefix(alice.baseURL + "/webcourier/"), "\(name): \(value) gave \(origin)")
            }
        }
    }

    @Test(arguments: Engine.available) func deviceIDsAreBoundedAndFreeOfControlCharacters(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let long = try await alice.onDevice(String(repeating: "d", count: 256)).modify("Z", [op("create", "a")])
            #expect(long.status == 400)
            #expect(long["reason"]?.string?.contains("device ID") == true)
            var nul = alice
            nul.deviceID = nil
            let url = nul.url("private", "records/modify") + "&deviceID=phone%00tablet"
            let reply = try await nul.send(
                url, method: .POST,
                body: JSON.object(["zoneID": ["zoneName": "Z"], "operations": [op("create", "b")]]).serializedBytes(),
                headers: [])
            #expect(reply.status == 400)
            #expect(try await alice.changes("Z").records.isEmpty)
            // 255 bytes is a device ID.
            #expect(try await alice.onDevice(String(repeating: "d", count: 255)).modify("Z", [op("create", "c")]).status == 200)
        }
    }
}
