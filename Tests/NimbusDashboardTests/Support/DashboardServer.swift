import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NimbusDashboard
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport

/// A real server with the dashboard on an ephemeral port over fresh storage, one container
/// and one operator (`ops` / `correct horse`), and a browser-like client that keeps cookies
/// and does not follow redirects.
struct DashboardServer: ServerHarnessLayer {
    static let container = "iCloud.com.example.dashboard"
    static let operatorName = "ops"
    static let password = "correct horse"

    let harness: ServerHarness

    static var quietLogger: Logger { Engine.quietLogger }

    /// Runs `body` against a fresh server (the shared ``ServerHarness`` with the dashboard's
    /// routes and the operator); stops it and removes its storage whatever happens.
    static func with<T>(_ engine: Engine = .sqlite, _ body: (DashboardServer, Browser) async throws -> T) async throws -> T {
        try await ServerHarness.with(
            engine, container: container,
            configure: {
                $0.signIn.passwordCost = 10
                $0.routeExtensions = [Dashboard()]
            }
        ) { harness in
            let hash = try await PasswordHasher(cost: 10).hash(password)
            try await harness.server.store.createOperator(name: operatorName, passwordHash: hash, now: 0)
            let browser = Browser(baseURL: harness.baseURL)
            return try await scoped { try await body(DashboardServer(harness: harness), browser) } cleanup: {
                try await browser.close()
            }
        }
    }

    /// A user's web auth token in the container.
    func userToken(_ name: String) async throws -> String {
        try await server.store.createUser(
            name: name, email: "\(name)@example.com", firstName: nil, lastName: nil, container: Self.container
        ).token
    }

    /// POSTs to the CloudKit API of a development database (the public one by default) as a user.
    func api(_ operation: String, _ body: JSON, webAuthToken: String, scope: String = "public") async throws -> JSON {
        let url = "\(server.baseURL)/database/1/\(Self.container)/development/\(scope)/\(operation)?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webAuthToken)"
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.body = .bytes(ByteBuffer(string: body.serialized()))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let bytes = try await response.body.collect(upTo: 1 << 22)
        return try JSON.parse(Array(bytes.readableBytesView))
    }
}

/// What a page answered.
struct Page: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: String

    var location: String? { headers.first(name: "location") }
}

/// A client that keeps cookies as a browser does (by name) and never follows redirects.
actor Browser {
    let baseURL: String
    private let client = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
    private(set) var cookies: [String: String] = [:]

    init(baseURL: String) { self.baseURL = baseURL }

    func close() async throws { try await client.shutdown() }

    func get(_ path: String) async throws -> Page {
        try await send(path, method: .GET, body: nil)
    }

    /// POSTs a form, URL-encoded.
    func post(_ path: String, _ form: [String: String]) async throws -> Page {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        let body = form.map { "\($0.key.addingPercentEncoding(withAllowedCharacters: allowed)!)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
        return try await send(path, method: .POST, body: body)
    }

    private func send(_ path: String, method: HTTPMethod, body: String?) async throws -> Page {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if !cookies.isEmpty {
            request.headers.add(name: "Cookie", value: cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))
        }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await client.execute(request, timeout: .seconds(120))
        for header in response.headers[canonicalForm: "set-cookie"] {
            let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(pair[0]).trimmingCharacters(in: .whitespaces)
            let value = pair.count > 1 ? String(pair[1]) : ""
            if value.isEmpty || header.contains("Max-Age=0") { cookies[name] = nil } else { cookies[name] = value }
        }
        let bytes = try await response.body.collect(upTo: 1 << 22)
        return Page(status: Int(response.status.code), headers: response.headers, body: String(buffer: bytes))
    }

    func setCookie(_ name: String, _ value: String?) { cookies[name] = value }

    /// Signs in through the form; returns the answer to the POST.
    @discardableResult
    func signIn(name: String = DashboardServer.operatorName, password: String = DashboardServer.password) async throws -> Page {
        let form = try await get("/dashboard/signin")
        return try await post(
            "/dashboard/signin", ["csrf": Self.hidden("csrf", in: form.body) ?? "", "name": name, "password": password])
    }

    /// The value of the first hidden input named `name` in a page.
    static func hidden(_ name: String, in html: String) -> String? {
        guard let range = html.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = html[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }
}
