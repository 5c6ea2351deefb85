import Foundation
import NIOWebSocket
import NimbusEngines
import NimbusTestSupport
import WSCore
import NimbusProtocol
import NimbusServer
import NimbusStore
import Testing

/// Sessions through the API: listing, refreshing and revoking one's own, idle expiry, and
/// tokens that must be refused.
@Suite("Sessions")
struct SessionTests {
    @Test(arguments: Engine.available)
    func usersListRefreshAndRevokeTheirOwnSessions(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let phone = try await server.server.store.createSession(
                user: "alice", container: TestServer.container, device: SessionDevice(name: "Alice's phone", platform: "ios"))
            var onPhone = alice
            onPhone.webAuthToken = phone.token

            let listed = try await alice.post("sessions/list", [:])
            #expect(listed.status == 200)
            let sessions = listed["sessions"]?.array ?? []
            #expect(sessions.map { $0["deviceName"]?.string } == ["operator-issued", "Alice's phone"])
            #expect(sessions.map { $0["current"]?.bool } == [true, false])

            // Refreshing hands out a new token; the old one is refused from then on.
            let refreshed = try await onPhone.post("sessions/refresh", [:])
            #expect(refreshed["sessionID"]?.string == phone.session.id)
            let oldToken = onPhone
            onPhone.webAuthToken = refreshed["ckWebAuthToken"]?.string
            #expect(try await onPhone.get("users/current").status == 200)
            let stale = try await oldToken.get("users/current")
            #expect(stale.status == 401)
            #expect(stale.serverErrorCode == "AUTHENTICATION_FAILED")

            // Another user's session cannot be revoked, or told apart from an unknown one.
            let bob = try await server.user("bob")
            let bobsSession = try #require(try await server.server.store.listSessions(container: nil, userName: "bob").first)
            let refused = try await alice.post("sessions/revoke", ["sessionIDs": [.string(bobsSession.id), "s_nope"]])
            #expect(refused["sessions"]?.array?.map { $0["serverErrorCode"]?.string } == ["NOT_FOUND", "NOT_FOUND"])
            #expect(try await bob.get("users/current").status == 200)

            let revoked = try await alice.post("sessions/revoke", ["sessionIDs": [.string(phone.session.id)]])
            #expect(revoked["sessions"]?.array?.first?["revoked"] == true)
            let afterRevoke = try await onPhone.get("users/current")
            #expect(afterRevoke.status == 401)
            #expect(afterRevoke.serverErrorCode == "AUTHENTICATION_FAILED")
            #expect(try await alice.get("users/current").status == 200)
        }
    }

    /// `sessions/create`: a session opens another for a web service (CloudKit's
    /// `CKFetchWebAuthTokenOperation`); both tokens work, the new one is listed and revoked
    /// like any other, and only a session may ask.
    @Test(arguments: Engine.available)
    func aSessionOpensAnotherForAWebService(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let created = try await alice.post("sessions/create", ["deviceName": "Alice's backup service"])
            #expect(created.status == 200)
            let sessionID = try #require(created["sessionID"]?.string)
            var service = alice
            service.webAuthToken = try #require(created["ckWebAuthToken"]?.string)
            #expect(service.webAuthToken != alice.webAuthToken)
            #expect(try await service.get("users/current")["userRecordName"] == (try await alice.get("users/current")["userRecordName"]))
            #expect(try await alice.get("users/current").status == 200)

            let listed = try await alice.post("sessions/list", [:])["sessions"]?.array ?? []
            #expect(listed.map { $0["deviceName"]?.string } == ["operator-issued", "Alice's backup service"])
            _ = try await alice.post("sessions/revoke", ["sessionIDs": [.string(sessionID)]])
            #expect(try await service.get("users/current").serverErrorCode == "AUTHENTICATION_FAILED")
            #expect(try await alice.get("users/current").status == 200)

            let unnamed = try await alice.post("sessions/create", ["deviceName": "\u{7}bell"])
            #expect(unnamed.status == 400)
            #expect(unnamed.serverErrorCode == "BAD_REQUEST")
            let anonymous = try await server.anonymous().post("sessions/create", [:])
            #expect(anonymous.serverErrorCode == "AUTHENTICATION_REQUIRED")
        }
    }

    @Test(arguments: Engine.available)
    func aSessionOfAnotherContainerIsRefused(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let other = try await server.server.store.createContainer("iCloud.com.example.other")
            var elsewhere = alice
            elsewhere.container = "iCloud.com.example.other"
            elsewhere.apiToken = other.token
            let reply = try await elsewhere.get("users/current")
            #expect(reply.status == 401)
            #expect(reply.serverErrorCode == "AUTHENTICATION_FAILED")
        }
    }

    @Test(arguments: Engine.available)
    func sessionsExpireAfterTheIdleTimeUnlessUsed(engine: Engine) async throws {
        let clock = ManualWallClock(millis: 1_800_000_000_000)
        try await TestServer.with(engine, configure: { $0.clock = clock.wallClock }) { server in
            let alice = try await server.user("alice")
            // Used every 20 days, a session lives on past 30.
            for _ in 0..<3 {
                clock.advance(by: .seconds(20 * 86_400))
                #expect(try await alice.get("users/current").status == 200)
            }
            clock.advance(by: .seconds(31 * 86_400))
            let expired = try await alice.get("users/current")
            #expect(expired.status == 401)
            #expect(expired.serverErrorCode == "AUTHENTICATION_FAILED")
            #expect(expired["reason"]?.string?.contains("expired") == true)
        }
    }

    @Test(arguments: Engine.available)
    func revokingASessionClosesItsPushConnections(engine: Engine) async throws {
        try await TestServer.with(engine, configure: { $0.signIn.pushSessionCheckInterval = .milliseconds(50) }) { server in
            let alice = try await server.user("alice")
            let phone = try await server.server.store.createSession(
                user: "alice", container: TestServer.container, device: SessionDevice(name: "phone", platform: "ios"))
            var onPhone = alice
            onPhone.webAuthToken = phone.token
            let laptopPush = try await PushTestDevice.connect(alice, deviceID: "laptop")
            let phonePush = try await PushTestDevice.connect(onPhone, deviceID: "phone")

            // Through the API: closed at once.
            _ = try await alice.post("sessions/revoke", ["sessionIDs": [.string(phone.session.id)]])
            let frame = try await phonePush.closed()
            #expect(frame?.closeCode == .policyViolation)

            // Through another process (the CLI): closed by the next check.
            let laptopSession = try #require(
                try await server.server.store.listSessions(container: nil, userName: "alice").first { !$0.revoked })
            let cli = try await server.storage.open(logger: TestServer.quietLogger)
            #expect(try await cli.revokeSession(id: laptopSession.id))
            try await cli.shutdown()
            #expect(try await laptopPush.closed()?.closeCode == .policyViolation)
        }
    }

    @Test(arguments: Engine.available)
    func operatorsSeeAndRevokeSessionsAsTokens(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let store = server.server.store
            let listed = try await store.listTokens(container: TestServer.container)
            let web = try #require(listed.first { $0.kind == .webAuth })
            #expect(web.user?.name == "alice")
            #expect(web.sessionID == web.token, "a session is listed by its ID: its token is kept only hashed")
            #expect(try await store.revokeToken(web.token))
            #expect(try await alice.get("users/current").serverErrorCode == "AUTHENTICATION_FAILED")
        }
    }
}
