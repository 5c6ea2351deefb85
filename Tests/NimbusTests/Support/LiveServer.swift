import Foundation
import Logging
import Nimbus
import NimbusEngines
import NimbusServer
import NimbusStore

/// A real Nimbus server on an ephemeral loopback port over a fresh SQLite directory, with
/// one container provisioned: what the SDK talks to in integration tests.
final class LiveServer: Sendable {
    static let containerID = "iCloud.com.example.sdk"

    let server: RunningServer
    let directory: String
    let apiToken: String

    private init(server: RunningServer, directory: String, apiToken: String) {
        self.server = server
        self.directory = directory
        self.apiToken = apiToken
    }

    /// Runs `body` against a fresh server, then stops it and removes its files.
    static func with<T: Sendable>(
        configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (LiveServer) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-sdk-\(UUID().uuidString)").path
        var configuration = ServerConfiguration(port: 0, dataDirectory: directory)
        configure(&configuration)
        var logger = Logger(label: "nimbus-sdk-test")
        logger.logLevel = .critical
        let server = try await RunningServer.start(configuration, logger: logger)
        let live = LiveServer(
            server: server, directory: directory, apiToken: try await server.store.createContainer(containerID).token)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let result = try await body(live)
            try await server.stop()
            return result
        } catch {
            try? await server.stop()
            throw error
        }
    }

    var baseURL: URL { URL(string: server.baseURL)! }

    /// Starts a server over an existing data directory (the same port when given), for tests
    /// that restart the server under connected clients.
    static func start(directory: String, port: Int = 0) async throws -> RunningServer {
        var logger = Logger(label: "nimbus-sdk-test")
        logger.logLevel = .critical
        return try await RunningServer.start(ServerConfiguration(port: port, dataDirectory: directory), logger: logger)
    }

    /// A container signed in as a new user (or an existing one, by name), on one device.
    func container(
        user: String, device: String = UUID().uuidString, assetTransport: (any AssetTransport)? = nil
    ) async throws -> Container {
        let token = try await server.store.createUser(
            name: user, email: nil, firstName: nil, lastName: nil, container: Self.containerID)
        return Container(
            identifier: Self.containerID, baseURL: baseURL, credentials: .apiToken(apiToken, webAuthToken: token.token),
            deviceID: device, assetTransport: assetTransport)
    }

    /// Waits until the server has `count` push connections for the container's user.
    func waitForPushDevices(_ count: Int, of container: Container) async throws {
        let recipient = NotificationRecipient(
            container: Self.containerID, environment: .development,
            userRecordName: try await container.userRecordID().recordName)
        let hub = server.push
        try await withTimeout("\(count) push connections") { await hub.waitForConnectedDevices(count, of: recipient) }
    }

    /// A container with only the API token (no user).
    func anonymousContainer() -> Container {
        Container(identifier: Self.containerID, baseURL: baseURL, credentials: .apiToken(apiToken), deviceID: "anon")
    }
}
