import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// The absolute URLs in answers (`webcourierURL`, asset upload and download URLs, a share's
/// `url`, a sign-in `redirectURL`): from the public URL when there is one, and never from
/// forwarding headers of a peer the operator does not trust (docs/SECURITY.md).
@Suite("Security: absolute URLs in answers")
struct AbsoluteURLTests {
    static let names = ["webcourierURL", "upload url", "downloadURL", "share url", "redirectURL"]

    /// A server with sign-in pages on (for `redirectURL`), alice prepared for the probe.
    static func withProbe(
        _ engine: Engine, configure: @escaping (inout ServerConfiguration) -> Void = { _ in },
        _ body: (TestServer, TestClient) async throws -> Void
    ) async throws {
        try await TestServer.withSignIn(engine, outbox: MailOutbox(), configure: configure) { server in
            try await server.enablePasswords()
            let alice = try await server.user("alice")
            try await OriginProbe.prepare(alice)
            try await body(server, alice)
        }
    }

    @Test(arguments: Engine.available, Poisoning.allCases)
    func withoutTrustedProxiesForwardingHeadersAreIgnored(engine: Engine, poisoning: Poisoning) async throws {
        try await Self.withProbe(engine) { server, alice in
            let urls = try await OriginProbe.urls(alice, anonymous: server.anonymous(), headers: poisoning.headers)
            #expect(urls.keys.sorted() == Self.names.sorted())
            // The client's own Host is where its answers point (it reached the server there);
            // nothing else a client sends moves them.
            let expected = poisoning == .host ? "http://\(Poisoning.attackerHost)/" : "http://127.0.0.1:\(server.server.port)/"
            for (name, url) in urls {
                #expect(url.hasPrefix(expected), "\(name): \(url)")
            }
        }
    }

    @Test(arguments: Engine.available, Poisoning.allCases)
    func withAPublicURLEveryAbsoluteURLStartsWithItAndOtherHostsAreRefused(engine: Engine, poisoning: Poisoning)
        async throws
    {
        try await Self.withProbe(
            engine,
            configure: {
                $0.origin.publicURL = try! PublicURL("https://sync.example.com")
                $0.origin.trustedProxies = [try! AddressRange("127.0.0.0/8")]
            }
        ) { server, alice in
            let plain = try await OriginProbe.urls(alice, anonymous: server.anonymous(), headers: [])
            for (name, url) in plain {
                #expect(url.hasPrefix("https://sync.example.com/"), "\(name): \(url)")
            }
            let urls = try await OriginProbe.urls(alice, anonymous: server.anonymous(), headers: poisoning.headers)
            for (name, url) in urls {
                if poisoning == .forwardedProto {
                    #expect(url.hasPrefix("https://sync.example.com/"), "\(name): \(url)")
                } else {
                    #expect(url == "status 400 BAD_REQUEST", "\(name): \(url)")
                }
            }
        }
    }

    @Test(arguments: Engine.available)
    func aTrustedProxysLastForwardedElementNamesTheOrigin(engine: Engine) async throws {
        try await Self.withProbe(engine, configure: { $0.origin.trustedProxies = [try! AddressRange("::1"), try! AddressRange("127.0.0.1/32")] }) {
            server, alice in
            // A client wrote the first element; the proxy (the server's peer) appended the last.
            let forwarded = try await OriginProbe.urls(
                alice, anonymous: server.anonymous(),
                headers: [("Forwarded", "host=\(Poisoning.attackerHost);proto=http, host=sync.example.com;proto=https")])
            for (name, url) in forwarded {
                #expect(url.hasPrefix("https://sync.example.com/"), "\(name): \(url)")
            }
            let legacy = try await OriginProbe.urls(
                alice, anonymous: server.anonymous(),
                headers: [("X-Forwarded-Host", "\(Poisoning.attackerHost), sync.example.com"), ("X-Forwarded-Proto", "https")])
            for (name, url) in legacy {
                #expect(url.hasPrefix("https://sync.example.com/"), "\(name): \(url)")
            }
        }
    }

    @Test func aRequestWithoutTheConfiguredHostIsRefusedEverywhere() async throws {
        try await TestServer.with(configure: { $0.origin.publicURL = try! PublicURL("https://sync.example.com") }) { server in
            let base = server.server.baseURL
            for path in ["/health", "/openapi.yaml", "/", "/signin/\(TestServer.container)/development", "/webcourier/x"] {
                let refused = try await server.anonymous().send(
                    base + path, method: .GET, body: nil, headers: [("Host", Poisoning.attackerHost)])
                #expect(refused.status == 400, "\(path): \(refused.status)")
                #expect(refused.serverErrorCode == "BAD_REQUEST", "\(path): \(refused.text)")
                #expect(!refused.text.contains(Poisoning.attackerHost))
            }
            for host in ["sync.example.com", "SYNC.example.com:443", "127.0.0.1:\(server.server.port)", "localhost:\(server.server.port)"] {
                let answered = try await server.anonymous().send(base + "/health", method: .GET, body: nil, headers: [("Host", host)])
                #expect(answered.status == 200, "\(host): \(answered.status)")
            }
            // The push channel's WebSocket upgrade too.
            let alice = try await server.user("alice")
            let target = "/push/\(TestServer.container)/development?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(alice.webAuthToken ?? "")"
            for (host, status) in [(Poisoning.attackerHost, 400), ("sync.example.com", 101)] {
                let connection = try await RawConnection.open(port: server.server.port)
                try await connection.send(
                    "GET \(target) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                let reply = try await connection.waitForResponse()
                #expect(reply.status == status, "\(host): \(reply.text)")
                await connection.close()
            }
        }
    }
}
