import Foundation
import Logging
import NimbusEngines
import NimbusServer
import NimbusStore
import NimbusTestSupport

/// Several real server nodes on one fresh PostgreSQL schema, each on its own ephemeral port,
/// as they would run behind a load balancer.
final class TestCluster: Sendable {
    let nodes: [RunningServer]
    let apiToken: String
    private let storage: StorageLocation

    private init(nodes: [RunningServer], apiToken: String, storage: StorageLocation) {
        self.nodes = nodes
        self.apiToken = apiToken
        self.storage = storage
    }

    /// Runs `body` against `count` fresh nodes keeping asset bytes at `assets` (by default in
    /// PostgreSQL), then stops them and drops their schema.
    static func with<T>(
        nodes count: Int, assets: AssetLocation = .engineDefault, _ body: (TestCluster) async throws -> T
    ) async throws -> T {
        let storage = try Engine.postgres.freshStorage()
        var nodes: [RunningServer] = []
        do {
            for _ in 0..<count {
                var configuration = ServerConfiguration(port: 0)
                configuration.storage = storage
                configuration.assets.location = assets
                nodes.append(try await RunningServer.start(configuration, logger: TestServer.quietLogger))
            }
            let token = try await nodes[0].store.createContainer(TestServer.container)
            let cluster = TestCluster(nodes: nodes, apiToken: token.token, storage: storage)
            let result = try await body(cluster)
            try await cluster.stop()
            return result
        } catch {
            for node in nodes { try? await node.stop() }
            try? await storage.removeAll(logger: TestServer.quietLogger)
            throw error
        }
    }

    private func stop() async throws {
        for node in nodes { try await node.stop() }
        try await storage.removeAll(logger: TestServer.quietLogger)
    }

    /// Creates a user and returns a client signed in as them, talking to `node`.
    func user(_ name: String, node: Int) async throws -> TestClient {
        let token = try await nodes[node].store.createUser(
            name: name, email: "\(name)@example.com", firstName: name.capitalized, lastName: nil,
            container: TestServer.container)
        return TestClient(
            baseURL: nodes[node].baseURL, container: TestServer.container, apiToken: apiToken,
            webAuthToken: token.token, userRecordName: token.user!.recordName, deviceID: nil)
    }

    /// The same client talking to another node.
    func client(_ client: TestClient, node: Int) -> TestClient {
        var moved = client
        moved.baseURL = nodes[node].baseURL
        return moved
    }
}
