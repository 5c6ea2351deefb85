import Logging
import NimbusEngines
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

@Suite("Provisioning while the server runs")
struct ProvisioningTests {
    /// The CLI opens the storage a second time (another SQLite connection pool on the file, or
    /// another PostgreSQL pool), as another process does; what it creates is usable at once by
    /// the running server, and what it revokes is refused once the server's last answer for
    /// the token has expired (SQLite's server keeps one for ``TokenLookupCache/lifetimeMillis``;
    /// its clock is moved past that here).
    @Test(arguments: Engine.available) func usersAndTokensCreatedBesideTheRunningServerWorkImmediately(engine: Engine) async throws {
        let clock = ManualWallClock(millis: WallClock.system.nowMillis())
        try await TestServer.with(engine, configure: { $0.clock = clock.wallClock }) { server in
            var logger = Logger(label: "cli")
            logger.logLevel = .critical
            let cli = try await server.storage.open(logger: logger)
            let container = "iCloud.com.example.cli"
            let apiToken = try await cli.createContainer(container)
            let webToken = try await cli.createUser(
                name: "dana", email: nil, firstName: "Dana", lastName: nil, container: container)
            let client = TestClient(
                baseURL: server.server.baseURL, container: container, apiToken: apiToken.token,
                webAuthToken: webToken.token)
            let me = try await client.get("users/current")
            #expect(me.status == 200)
            #expect(me["userRecordName"]?.string == webToken.user?.recordName)
            #expect(me["firstName"] == "Dana")

            let tokens = try await cli.listTokens(container: container)
            #expect(Set(tokens.map(\.kind)) == [.api, .webAuth])
            #expect(try await cli.revokeToken(apiToken.token))
            clock.advance(by: .milliseconds(TokenLookupCache.lifetimeMillis))
            #expect(try await client.get("users/current").serverErrorCode == "AUTHENTICATION_FAILED")
            // Creating a container twice is refused with what to do instead.
            await #expect(throws: AccountError.self) { _ = try await cli.createContainer(container) }
            try await cli.shutdown()
        }
    }
}
