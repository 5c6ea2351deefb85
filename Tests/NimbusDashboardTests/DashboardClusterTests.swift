import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusDashboard
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Several nodes on one PostgreSQL database: an operator's session works on every node, and
/// each node's live page counts its own requests.
@Suite("Dashboard on several nodes")
struct DashboardClusterTests {
    @Test("a session opened on one node works on another; live numbers are per node", .enabled(if: Engine.available.contains(.postgres)))
    func twoNodes() async throws {
        try await DashboardServer.with(.postgres) { server, one in
            // A second node on the same database; the harness stops it with the first.
            let second = try await server.harness.startNode()
            #expect(try await one.signIn().status == 303)
            let other = Browser(baseURL: second.baseURL)
            try await scoped {
                await other.setCookie("nimbus_operator", await one.cookies["nimbus_operator"])
                let page = try await other.get("/dashboard")
                #expect(page.status == 200)
                #expect(page.body.contains("Containers"))
            } cleanup: {
                try await other.close()
            }
            #expect(server.server.statistics.snapshot().total > second.statistics.snapshot().total)
        }
    }
}
