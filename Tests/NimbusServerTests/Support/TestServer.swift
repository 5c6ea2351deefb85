import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore

/// A real Nimbus server on an ephemeral port over fresh storage (a new SQLite file, or a new
/// PostgreSQL schema), with one container provisioned, for tests that drive the HTTP API as
/// clients do.
final class TestServer: Sendable {
    static let container = "iCloud.com.example.tests"

    /// A logger for servers and stores under test: only what would be a crash.
    static let quietLogger: Logger = {
        var logger = Logger(label: "nimbus-test")
        logger.logLevel = .critical
        return logger
    }()

    let server: RunningServer
    /// Where the server keeps its data; open it again to act as another process would.
    let storage: StorageLocation
    let apiToken: String

    private init(server: RunningServer, storage: StorageLocation, apiToken: String) {
        self.server = server
        self.storage = storage
        self.apiToken = apiToken
    }

    static func start(
        _ engine: Engine = .sqlite, configure: (inout ServerConfiguration) -> Void = { _ in },
        logger: Logger = quietLogger, delivery: @Sendable (PushHub) -> any PushDelivery = { $0 }
    ) async throws -> TestServer {
        var configuration = ServerConfiguration(port: 0)
        configuration.storage = engine.freshStorage()
        // Longer than the tests' HTTP client keeps an idle connection (`HTTPClient.shared`: 60 s,
        // the server's default too), so the client always drops it first. With the two equal, a
        // test that left its connection idle about a minute under the full suite's load (41
        // devices connecting) had it closed by the server as it sent a modify on it
        // (`remoteConnectionClosed`). Tests of the idle timeout set their own.
        configuration.connections.idleTimeout = .seconds(120)
        configure(&configuration)
        let server = try await RunningServer.start(configuration, logger: logger, delivery: delivery)
        do {
            let token = try await server.store.createContainer(container)
            return TestServer(server: server, storage: configuration.storage, apiToken: token.token)
        } catch {
            try? await server.stop()
            try? await configuration.storage.removeAll(logger: TestServer.quietLogger)
            throw error
        }
    }

    /// Runs `body` against a fresh server, then stops it and removes its files.
    static func with<T>(
        _ engine: Engine = .sqlite, configure: (inout ServerConfiguration) -> Void = { _ in },
        logger: Logger = quietLogger, delivery: @Sendable (PushHub) -> any PushDelivery = { $0 },
        _ body: (TestServer) async throws -> T
    ) async throws -> T {
        let server = try await start(engine, configure: configure, logger: logger, delivery: delivery)
        do {
            let result = try await body(server)
            try await server.stop()
            return result
        } catch {
            try? await server.stop()
            throw error
        }
    }

    func stop() async throws {
        try await server.stop()
        try await storage.removeAll(logger: TestServer.quietLogger)
    }

    /// Creates a user and returns a client signed in as them.
    func user(_ name: String, device: String? = nil) async throws -> TestClient {
        let token = try await server.store.createUser(
            name: name, email: "\(name)@example.com", firstName: name.capitalized, lastName: nil, container: Self.container)
        return TestClient(
            baseURL: server.baseURL, container: Self.container, apiToken: apiToken, webAuthToken: token.token,
            userRecordName: token.user!.recordName, deviceID: device)
    }

    /// A client with only the API token (anonymous, public database reads).
    func anonymous() -> TestClient {
        TestClient(
            baseURL: server.baseURL, container: Self.container, apiToken: apiToken, webAuthToken: nil,
            userRecordName: nil, deviceID: nil)
    }
}

/// A minimal CloudKit Web Services client over AsyncHTTPClient: sends JSON, returns status and JSON.
struct TestClient: Sendable {
    var baseURL: String
    var container: String
    var apiToken: String?
    var webAuthToken: String?
    var userRecordName: String?
    var deviceID: String?
    var environment = "development"

    struct Reply: Sendable {
        var status: Int
        var json: JSON
        var text: String

        subscript(key: String) -> JSON? { json[key] }
        var records: [JSON] { json["records"]?.array ?? [] }
        var zones: [JSON] { json["zones"]?.array ?? [] }
        var serverErrorCode: String? { json["serverErrorCode"]?.string }
    }

    func url(_ scope: String, _ operation: String) -> String {
        var query: [String] = []
        if let apiToken { query.append("ckAPIToken=\(apiToken)") }
        if let webAuthToken { query.append("ckWebAuthToken=\(webAuthToken)") }
        let suffix = query.isEmpty ? "" : "?" + query.joined(separator: "&")
        return "\(baseURL)/database/1/\(container)/\(environment)/\(scope)/\(operation)\(suffix)"
    }

    /// POSTs `body` (a JSON value, or raw text) to an operation.
    func post(
        _ operation: String, _ body: JSON, scope: String = "private", headers: [(String, String)] = []
    ) async throws -> Reply {
        try await send(url(scope, operation), method: .POST, body: body.serializedBytes(), headers: headers)
    }

    func postRaw(_ operation: String, _ text: String, scope: String = "private", headers: [(String, String)] = [])
        async throws -> Reply
    {
        try await send(url(scope, operation), method: .POST, body: Array(text.utf8), headers: headers)
    }

    func get(_ operation: String, scope: String = "private") async throws -> Reply {
        try await send(url(scope, operation), method: .GET, body: nil, headers: [])
    }

    /// Sends one request and reads the whole answer; fails when it takes longer than `timeout`.
    func send(
        _ url: String, method: HTTPMethod, body: [UInt8]?, headers: [(String, String)], timeout: TimeAmount = .seconds(300)
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let deviceID { request.headers.add(name: "X-Nimbus-Device-ID", value: deviceID) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let buffer = try await response.body.collect(upTo: 256 << 20)
        let text = String(buffer: buffer)
        let json = (try? JSON.parse(Array(buffer.readableBytesView))) ?? .null
        return Reply(status: Int(response.status.code), json: json, text: text)
    }

    // MARK: - Shorthands

    func createZone(_ name: String) async throws -> Reply {
        try await post(
            "zones/modify",
            ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(name)]]]]])
    }

    func modify(_ zone: String, _ operations: [JSON], atomic: Bool? = nil, scope: String = "private") async throws
        -> Reply
    {
        var body: [String: JSON] = ["zoneID": ["zoneName": .string(zone)], "operations": .array(operations)]
        if let atomic { body["atomic"] = .bool(atomic) }
        return try await post("records/modify", .object(body), scope: scope)
    }

    func changes(_ zone: String, since token: String? = nil, limit: Int? = nil) async throws -> Reply {
        var body: [String: JSON] = ["zoneID": ["zoneName": .string(zone)]]
        if let token { body["syncToken"] = .string(token) }
        if let limit { body["resultsLimit"] = .int(limit) }
        return try await post("records/changes", .object(body))
    }
}

/// Builds a `records/modify` operation.
func op(_ type: String, _ name: String, _ recordType: String = "Item", fields: [String: JSON] = [:], tag: String? = nil)
    -> JSON
{
    var record: [String: JSON] = ["recordName": .string(name), "recordType": .string(recordType)]
    if !fields.isEmpty { record["fields"] = .object(fields.mapValues { ["value": $0] }) }
    if let tag { record["recordChangeTag"] = .string(tag) }
    return ["operationType": .string(type), "record": .object(record)]
}
