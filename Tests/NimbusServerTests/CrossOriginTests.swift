import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// CORS for browser apps: the API's answers name an `Origin` in `Access-Control-Allow-Origin`
/// only when it is one of the container's allowed origins, as CloudKit JS on that origin
/// sends its requests (a GET, a `text/plain` POST, credentials in the query).
@Suite("Cross-origin reads")
struct CrossOriginTests {
    func send(_ url: String, origin: String?, body: String? = nil) async throws -> (status: Int, headers: HTTPHeaders) {
        var request = HTTPClientRequest(url: url)
        if let origin { request.headers.add(name: "Origin", value: origin) }
        if let body {
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "text/plain")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(300))
        _ = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), response.headers)
    }

    @Test(arguments: Engine.available) func onlyTheContainersAllowedOriginsMayReadAnswers(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            try await server.enablePasswords(origins: ["https://app.example", "http://localhost:5173"])
            let base = "\(server.server.baseURL)/database/1/\(TestServer.container)/development"
            let current = "\(base)/private/users/current?ckAPIToken=\(server.apiToken)"

            // The 421 that carries redirectURL is readable by the app, as cloudkit.js needs.
            let allowed = try await send(current, origin: "https://app.example")
            #expect(allowed.status == 421)
            #expect(allowed.headers["Access-Control-Allow-Origin"] == ["https://app.example"])
            #expect(allowed.headers["Vary"].contains("Origin"))
            let query = try await send(
                "\(base)/public/records/query?ckAPIToken=\(server.apiToken)", origin: "http://localhost:5173",
                body: #"{"query":{"recordType":"Item"}}"#)
            #expect(query.headers["Access-Control-Allow-Origin"] == ["http://localhost:5173"])
            let device = try await send(
                "\(server.server.baseURL)/device/1/\(TestServer.container)/development/tokens/create?ckAPIToken=\(server.apiToken)",
                origin: "https://app.example", body: #"{"apnsEnvironment":"development"}"#)
            #expect(device.headers["Access-Control-Allow-Origin"] == ["https://app.example"])

            // Anything else: answered, but not readable by the page.
            for origin in [
                "https://evil.example", "https://app.example.evil.example", "http://app.example", "null",
                "https://APP.example", "https://app.example/", "https://app.example:443",
            ] {
                let refused = try await send(current, origin: origin)
                #expect(refused.status == 421, "\(origin)")
                #expect(refused.headers["Access-Control-Allow-Origin"].isEmpty, "\(origin)")
            }
            // Another container's origins do not count, nor does a container that does not exist.
            let other = try await send(
                "\(server.server.baseURL)/database/1/iCloud.com.example.other/development/private/users/current?ckAPIToken=x",
                origin: "https://app.example")
            #expect(other.headers["Access-Control-Allow-Origin"].isEmpty)
            // No Origin (not a browser's cross-origin request): nothing added.
            #expect(try await send(current, origin: nil).headers["Vary"].isEmpty)
        }
    }
}
