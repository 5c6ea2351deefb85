import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Server-to-server requests: what is checked before the body is read, and the two forms a
/// body-less request may be signed in.
@Suite("Server-to-server signatures")
struct SignedRequestTests {
    struct Signer {
        let key = P256.Signing.PrivateKey()
        let keyID = "edge-key"

        func headers(path: String, bodyHashField: String, date: Date = Date()) throws -> [(String, String)] {
            let dateText = ISO8601DateFormatter().string(from: date)
            let signature = try key.signature(for: Data("\(dateText):\(bodyHashField):\(path)".utf8))
            return [
                ("X-Apple-CloudKit-Request-KeyID", keyID), ("X-Apple-CloudKit-Request-ISO8601Date", dateText),
                ("X-Apple-CloudKit-Request-SignatureV1", signature.derRepresentation.base64EncodedString()),
            ]
        }

        static func hash(_ body: [UInt8]) -> String { Data(SHA256.hash(data: body)).base64EncodedString() }
    }

    static func withSigner(_ engine: Engine, _ body: (TestServer, Signer) async throws -> Void) async throws {
        try await TestServer.with(engine) { server in
            let signer = Signer()
            try await server.server.store.addServerKey(
                keyID: signer.keyID, container: TestServer.container, publicKeyPEM: signer.key.publicKey.pemRepresentation)
            try await body(server, signer)
        }
    }

    static func path(_ operation: String) -> String { "/database/1/\(TestServer.container)/development/public/\(operation)" }

    static func send(_ server: TestServer, _ path: String, method: HTTPMethod, body: [UInt8]?, headers: [(String, String)])
        async throws -> TestClient.Reply
    {
        try await server.anonymous().send(server.server.baseURL + path, method: method, body: body, headers: headers)
    }

    @Test(arguments: Engine.available) func aBodylessRequestMaySignAnEmptyBodyHashField(engine: Engine) async throws {
        try await Self.withSigner(engine) { server, signer in
            let path = Self.path("zones/list")
            // The hash of the empty body, as the protocol says.
            let hashed = try await Self.send(
                server, path, method: .GET, body: nil, headers: try signer.headers(path: path, bodyHashField: Signer.hash([])))
            #expect(hashed.status == 200, "\(hashed.text)")
            // An empty field, as some CloudKit clients sign GETs.
            let empty = try await Self.send(server, path, method: .GET, body: nil, headers: try signer.headers(path: path, bodyHashField: ""))
            #expect(empty.status == 200, "\(empty.text)")
            #expect(empty["zones"]?.array?.isEmpty == false)
            // The date and path are signed all the same.
            let otherPath = try signer.headers(path: Self.path("zones/lookup"), bodyHashField: "")
            #expect(try await Self.send(server, path, method: .GET, body: nil, headers: otherPath).status == 401)
            let stale = try signer.headers(path: path, bodyHashField: "", date: Date().addingTimeInterval(-3600))
            #expect(try await Self.send(server, path, method: .GET, body: nil, headers: stale).status == 401)
        }
    }

    @Test(arguments: Engine.available) func aBodyIsNeverCoveredByAnEmptyBodyHashField(engine: Engine) async throws {
        try await Self.withSigner(engine) { server, signer in
            let path = Self.path("zones/lookup")
            let body = JSON.object(["zones": [["zoneName": "_defaultZone"]]]).serializedBytes()
            let unsigned = try await Self.send(
                server, path, method: .POST, body: body, headers: try signer.headers(path: path, bodyHashField: ""))
            #expect(unsigned.status == 401)
            #expect(unsigned.serverErrorCode == "AUTHENTICATION_FAILED")
            let signed = try await Self.send(
                server, path, method: .POST, body: body, headers: try signer.headers(path: path, bodyHashField: Signer.hash(body)))
            #expect(signed.status == 200, "\(signed.text)")
        }
    }

    /// CloudKit JS signs `{date}:{bodyHash}:{path}?{query}`: its requests carry
    /// `ckjsBuildVersion`, `ckjsVersion` and `clientId`. The query counts exactly as sent.
    @Test(arguments: Engine.available) func cloudKitJSSignsThePathWithItsQueryString(engine: Engine) async throws {
        try await Self.withSigner(engine) { server, signer in
            let path = Self.path("zones/lookup")
            let query = "ckjsBuildVersion=2604ProjectDev34&ckjsVersion=2.6.4&clientId=0d3c4c1e-6f2a-4d8e-9a51-%2Bweb"
            let body = JSON.object(["zones": [["zoneName": "_defaultZone"]]]).serializedBytes()
            let hash = Signer.hash(body)
            func send(signing signed: String, to target: String) async throws -> TestClient.Reply {
                try await Self.send(
                    server, target, method: .POST, body: body, headers: try signer.headers(path: signed, bodyHashField: hash))
            }
            let asCloudKitJS = try await send(signing: "\(path)?\(query)", to: "\(path)?\(query)")
            #expect(asCloudKitJS.status == 200, "\(asCloudKitJS.text)")
            #expect(asCloudKitJS["zones"]?.array?.count == 1)
            // The path alone still signs a request with a query (Apple's documented form).
            #expect(try await send(signing: path, to: "\(path)?\(query)").status == 200)
            // Nothing looser: the query as sent, not decoded, reordered, cut, nor one the request lacks.
            let refused = [
                ("\(path)?\(query.replacingOccurrences(of: "%2B", with: "+"))", "\(path)?\(query)"),
                ("\(path)?clientId=0d3c4c1e&ckjsVersion=2.6.4", "\(path)?ckjsVersion=2.6.4&clientId=0d3c4c1e"),
                ("\(path)?ckjsVersion=2.6.4", "\(path)?ckjsVersion=2.6.4&clientId=0d3c4c1e"),
                ("\(path)?\(query)", path),
                ("\(path)?", "\(path)?\(query)"),
            ]
            for (signed, target) in refused {
                let reply = try await send(signing: signed, to: target)
                #expect(reply.status == 401, "signed \(signed), sent \(target): \(reply.text)")
                #expect(reply.serverErrorCode == "AUTHENTICATION_FAILED")
            }
        }
    }

    @Test(arguments: Engine.available) func aSignedUploadIsRefusedOnItsHeadersBeforeItsBody(engine: Engine) async throws {
        try await Self.withSigner(engine) { server, signer in
            let port = server.server.port
            let path = Self.path("records/modify")
            let cases: [(String, [(String, String)])] = [
                ("stale date", try signer.headers(path: path, bodyHashField: "x", date: Date().addingTimeInterval(-3600))),
                ("unknown key", [("X-Apple-CloudKit-Request-KeyID", "nope")] + (try signer.headers(path: path, bodyHashField: "x")).dropFirst()),
                ("no signature", Array(try signer.headers(path: path, bodyHashField: "x").prefix(2))),
                ("signature not base64", Array(try signer.headers(path: path, bodyHashField: "x").prefix(2)) + [("X-Apple-CloudKit-Request-SignatureV1", "%%%")]),
            ]
            for (name, headers) in cases {
                let connection = try await RawConnection.open(port: port)
                try await connection.send(
                    RequestLimitsTests.post(
                        path, port: port, headers: headers.map { "\($0.0): \($0.1)" } + ["Content-Length: \(50 << 20)"]))
                let reply = try await connection.waitForResponse()
                #expect(reply.status == 401, "\(name): \(reply.text)")
                try await connection.waitForClose()
            }
        }
    }
}
