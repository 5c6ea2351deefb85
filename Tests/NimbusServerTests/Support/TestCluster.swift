import Foundation
import NimbusServer
import NimbusStore
import NimbusTestSupport

/// Several real server nodes on one fresh PostgreSQL schema, each on its own ephemeral port,
/// as they would run behind a load balancer: the shared ``ServerHarness`` with `nodes: N`,
/// which stops every node and drops the schema whatever the test does.
struct TestCluster: ServerHarnessLayer {
    let harness: ServerHarness

    /// The nodes, in the order they started.
    var nodes: [RunningServer] { harness.nodes }

    /// Runs `body` against `count` fresh nodes keeping asset bytes at `assets` (by default in
    /// PostgreSQL), then stops them and drops their schema, also when `body` throws.
    static func with<T>(
        nodes count: Int, assets: AssetLocation = .engineDefault, _ body: (TestCluster) async throws -> T
    ) async throws -> T {
        try await ServerHarness.with(
            .postgres, container: TestServer.container, nodes: count, configure: { $0.assets.location = assets }
        ) { try await body(TestCluster(harness: $0)) }
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
