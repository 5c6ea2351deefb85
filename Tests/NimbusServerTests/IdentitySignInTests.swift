import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `accounts/signin/idtoken` against a real server on both engines, with a local issuer the
/// test makes (keys, tokens, JWKS through the server's fetch seam).
@Suite("Sign-in with identity tokens")
struct IdentitySignInTests {
    static func withIssuer<T>(
        _ engine: Engine, outbox: MailOutbox = MailOutbox(), _ body: (TestServer, LocalIssuer) async throws -> T
    ) async throws -> T {
        let issuer = LocalIssuer()
        return try await TestServer.withSignIn(engine, outbox: outbox, configure: { $0.signIn.identityKeys = issuer }) { server in
            try await server.server.store.addIdentityIssuer(issuer.config(), container: TestServer.container)
            return try await body(server, issuer)
        }
    }

    static func exchange(_ token: String, on server: TestServer, device: String = "phone", nonce: String? = nil)
        async throws -> TestClient.Reply
    {
        var body: [String: JSON] = ["idToken": .string(token), "deviceName": .string(device), "platform": "ios"]
        if let nonce { body["nonce"] = .string(nonce) }
        return try await server.anonymous().post("accounts/signin/idtoken", .object(body), scope: "public")
    }

    @Test(arguments: Engine.available) func anIDTokenOpensASessionAndTheSamePersonIsOneUserOnEveryDevice(engine: Engine) async throws {
        try await Self.withIssuer(engine) { server, issuer in
            let phone = try await Self.exchange(try await issuer.token(subject: "sub-1", nonce: "n1"), on: server, nonce: "n1")
            #expect(phone.status == 200, "\(phone.text)")
            let token = try #require(phone["ckWebAuthToken"]?.string)
            let userRecordName = try #require(phone["userRecordName"]?.string)

            var client = server.anonymous()
            client.webAuthToken = token
            let caller = try await client.post("users/caller", [:])
            #expect(caller["userRecordName"]?.string == userRecordName, "\(caller.text)")
            let saved = try await client.modify("_defaultZone", [op("create", "note-1")])
            #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")

            let laptop = try await Self.exchange(try await issuer.token(subject: "sub-1"), on: server, device: "laptop")
            #expect(laptop["userRecordName"]?.string == userRecordName, "one user record name per container")
            #expect(laptop["sessionID"]?.string != phone["sessionID"]?.string, "one session per device")
            let other = try await Self.exchange(try await issuer.token(subject: "sub-2"), on: server)
            #expect(other["userRecordName"]?.string != userRecordName)
        }
    }

    @Test(arguments: Engine.available) func replayedForeignAndUnconfiguredTokensAreRefused(engine: Engine) async throws {
        try await Self.withIssuer(engine) { server, issuer in
            let token = try await issuer.token()
            #expect(try await Self.exchange(token, on: server).status == 200)
            let replayed = try await Self.exchange(token, on: server)
            #expect(replayed.serverErrorCode == "AUTHENTICATION_FAILED")
            #expect(replayed["reason"]?.string?.contains("already exchanged") == true, "\(replayed.text)")

            let wrongAudience = try await Self.exchange(try await issuer.token(audience: "com.evil.app"), on: server)
            #expect(wrongAudience.serverErrorCode == "AUTHENTICATION_FAILED")
            let expired = try await Self.exchange(try await issuer.token(now: Date().addingTimeInterval(-7200)), on: server)
            #expect(expired.serverErrorCode == "AUTHENTICATION_FAILED")
            #expect(expired["reason"]?.string?.contains("expired") == true)
            let missing = try await server.anonymous().post("accounts/signin/idtoken", ["deviceName": "x"], scope: "public")
            #expect(missing.serverErrorCode == "BAD_REQUEST")

            // Once the container no longer accepts the issuer, its tokens open nothing.
            #expect(try await server.server.store.removeIdentityIssuer(issuer.issuer, container: TestServer.container))
            let unconfigured = try await Self.exchange(try await issuer.token(), on: server)
            #expect(unconfigured.serverErrorCode == "ACCESS_DENIED", "\(unconfigured.text)")
        }
    }

    @Test func aVerifiedAddressLinksToTheBuiltInAccountWithIt() async throws {
        let outbox = MailOutbox()
        try await Self.withIssuer(.sqlite, outbox: outbox) { server, issuer in
            try await server.enablePasswords()
            let (account, _) = try await server.signedUp("ada@example.com", outbox: outbox)
            let linked = try await Self.exchange(try await issuer.token(subject: "g-1", email: "Ada@example.com"), on: server)
            #expect(linked["userRecordName"]?.string == account.userRecordName, "\(linked.text)")
            // An address the issuer does not vouch for links nothing.
            let unverified = try await Self.exchange(
                try await issuer.token(subject: "g-2", email: "ada@example.com") { $0.email_verified = false }, on: server)
            #expect(unverified["userRecordName"]?.string != account.userRecordName)
        }
    }

    @Test func failedExchangesAreThrottledPerAddress() async throws {
        try await Self.withIssuer(.sqlite) { server, issuer in
            var last: TestClient.Reply?
            for _ in 0..<30 {
                last = try await Self.exchange(try await issuer.token(audience: "com.evil.app"), on: server)
                if last?.status == 429 { break }
            }
            #expect(last?.serverErrorCode == "THROTTLED", "\(last?.text ?? "")")
            #expect(last?["retryAfter"] != nil)
        }
    }
}
