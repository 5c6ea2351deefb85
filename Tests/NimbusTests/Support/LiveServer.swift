import Foundation
import Logging
import Nimbus
import NimbusServer
import NimbusStore
import NimbusTestSupport

/// A real Nimbus server on an ephemeral loopback port over fresh storage, with
/// one container provisioned (the shared ``ServerHarness``): what the SDK talks to in
/// integration tests.
final class LiveServer: ServerHarnessLayer {
    static let containerID = "iCloud.com.example.sdk"

    let harness: ServerHarness

    private init(harness: ServerHarness) {
        self.harness = harness
    }

    /// Runs `body` against a fresh server on `engine`, then stops it and removes its storage
    /// and files, also when `body` throws.
    static func with<T: Sendable>(
        engine: Engine = .sqlite, configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (LiveServer) async throws -> T
    ) async throws -> T {
        try await ServerHarness.with(engine, container: containerID, configure: configure) {
            try await body(LiveServer(harness: $0))
        }
    }

    var baseURL: URL { URL(string: server.baseURL)! }

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
