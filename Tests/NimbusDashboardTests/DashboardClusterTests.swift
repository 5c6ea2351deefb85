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
        let storage = try Engine.postgres.freshStorage()
        var configuration = ServerConfiguration(port: 0)
        configuration.storage = storage
        configuration.signIn.passwordCost = 10
        configuration.routeExtensions = [Dashboard()]
        let first = try await RunningServer.start(configuration, logger: DashboardServer.quietLogger)
        let second: RunningServer
        do {
            second = try await RunningServer.start(configuration, logger: DashboardServer.quietLogger)
        } catch {
            try? await first.stop()
            throw error
        }
        let one = Browser(baseURL: first.baseURL)
        do {
            try await first.store.createOperator(
                name: DashboardServer.operatorName, passwordHash: try await PasswordHasher(cost: 10).hash(DashboardServer.password),
                now: 0)
            #expect(try await one.signIn().status == 303)
            let other = Browser(baseURL: second.baseURL)
            await other.setCookie("nimbus_operator", await one.cookies["nimbus_operator"])
            let page = try await other.get("/dashboard")
            #expect(page.status == 200)
            #expect(page.body.contains("Containers"))
            try await other.close()
            #expect(first.statistics.snapshot().total > second.statistics.snapshot().total)
        } catch {
            Issue.record(error)
        }
        try? await one.close()
        try await second.stop()
        try await first.stop()
        try await storage.removeAll(logger: DashboardServer.quietLogger)
    }
}
