import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport

/// A mail sender that keeps what it is given, for tests to read the codes.
final class MailOutbox: MailSender {
    private let mails = NIOLockedValueBox<[Mail]>([])

    func send(_ mail: Mail) async throws {
        mails.withLockedValue { $0.append(mail) }
    }

    var all: [Mail] { mails.withLockedValue { $0 } }

    /// The 16-hex-digit code in the last mail to `address`.
    func lastCode(to address: String) -> String? {
        guard let body = all.last(where: { $0.to == address })?.body else { return nil }
        let words = body.split(whereSeparator: { !$0.isHexDigit })
        return words.last { $0.count == 16 }.map(String.init)
    }
}

extension TestServer {
    /// A server whose built-in accounts hash at cost 10 and mail through `outbox` (a
    /// ``MailOutbox``, or a real sender), on `clock` when given.
    static func withSignIn<T>(
        _ engine: Engine, outbox: any MailSender, clock: ManualWallClock? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestServer) async throws -> T
    ) async throws -> T {
        try await with(
            engine,
            configure: { configuration in
                configuration.signIn.passwordCost = 10
                configuration.signIn.mailSender = outbox
                if let clock { configuration.clock = clock.wallClock }
                configure(&configuration)
            }, body)
    }

    /// Turns built-in accounts on for the test container, allowing `origins` as redirect targets.
    func enablePasswords(origins: [String] = ["https://app.example"]) async throws {
        try await server.store.setSignInSettings(
            ContainerSignInSettings(passwords: true, redirectOrigins: origins), container: Self.container)
    }

    /// Signs up, verifies and signs in `email` through the JSON API; a client with the token.
    func signedUp(_ email: String, password: String = "correct horse", device: String = "laptop", outbox: MailOutbox)
        async throws -> (client: TestClient, sessionID: String)
    {
        let anonymous = anonymous()
        _ = try await anonymous.post("accounts/signup", ["email": .string(email), "password": .string(password)], scope: "public")
        let code = outbox.lastCode(to: email) ?? ""
        _ = try await anonymous.post("accounts/verify", ["email": .string(email), "code": .string(code)], scope: "public")
        let reply = try await anonymous.post(
            "accounts/signin",
            ["email": .string(email), "password": .string(password), "deviceName": .string(device), "platform": "test"],
            scope: "public")
        var client = anonymous
        client.webAuthToken = reply["ckWebAuthToken"]?.string
        client.userRecordName = reply["userRecordName"]?.string
        return (client, reply["sessionID"]?.string ?? "")
    }
}

/// A browser-like client that does not follow redirects and keeps cookies by hand.
struct FormBrowser {
    let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    struct Page {
        var status: Int
        var headers: HTTPHeaders
        var text: String

        /// The `nimbus_csrf` cookie set by the page.
        var csrfCookie: String? {
            headers["Set-Cookie"].lazy.compactMap { line -> String? in
                guard line.hasPrefix("nimbus_csrf=") else { return nil }
                return String(line.dropFirst("nimbus_csrf=".count).prefix { $0 != ";" })
            }.first
        }

        /// The value of the hidden `csrf` field.
        var csrfField: String? {
            guard let range = text.range(of: "name=\"csrf\" value=\"") else { return nil }
            return String(text[range.upperBound...].prefix { $0 != "\"" })
        }
    }

    func get(_ url: String) async throws -> Page {
        try await send(url, method: .GET, form: nil, cookie: nil)
    }

    func post(_ url: String, form: [(String, String)], cookie: String?, headers: [(String, String)] = []) async throws
        -> Page
    {
        let body = form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
            .joined(separator: "&")
        return try await send(url, method: .POST, form: body, cookie: cookie, headers: headers)
    }

    private func send(_ url: String, method: HTTPMethod, form: String?, cookie: String?, headers: [(String, String)] = [])
        async throws -> Page
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let cookie { request.headers.add(name: "Cookie", value: "nimbus_csrf=\(cookie)") }
        if let form {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: form))
        }
        let response = try await client.execute(request, timeout: .seconds(300))
        let buffer = try await response.body.collect(upTo: 1 << 20)
        return Page(status: Int(response.status.code), headers: response.headers, text: String(buffer: buffer))
    }

    func shutdown() async throws { try await client.shutdown() }
}
