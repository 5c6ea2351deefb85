import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport

/// A real Nimbus server on an ephemeral port over fresh storage (a new SQLite file, or a new
/// PostgreSQL schema), with one container provisioned, for tests that drive the HTTP API as
/// clients do: the shared ``ServerHarness`` with this suite's container and clients.
final class TestServer: ServerHarnessLayer {
    static let container = "iCloud.com.example.tests"

    /// A logger for servers and stores under test: only what would be a crash.
    static var quietLogger: Logger { Engine.quietLogger }

    let harness: ServerHarness

    private init(harness: ServerHarness) {
        self.harness = harness
    }

    /// Runs `body` against a fresh server, then stops it and removes its storage, also when
    /// `body` throws (see ``ServerHarness/with(_:container:nodes:configure:logger:delivery:_:)``).
    static func with<T>(
        _ engine: Engine = .sqlite, configure: (inout ServerConfiguration) -> Void = { _ in },
        logger: Logger = quietLogger, delivery: @escaping @Sendable (PushHub) -> any PushDelivery = { $0 },
        _ body: (TestServer) async throws -> T
    ) async throws -> T {
        try await ServerHarness.with(engine, container: container, configure: configure, logger: logger, delivery: delivery) {
            try await body(TestServer(harness: $0))
        }
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
