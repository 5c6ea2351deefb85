import Foundation
import NimbusProtocol
import NimbusTestSupport
import Testing

/// Answers an attacker can reach without an account never tell whether an address, a share
/// or another user's zone exists (docs/SECURITY.md, "Answers that could tell what exists").
@Suite("Security: enumeration")
struct EnumerationTests {
    /// An attacker signs an address up with a password of their own, then signs in with it:
    /// the answer is the same whether the address already had a verified account (their
    /// sign-up changed nothing) or had none (their sign-up waits for verification).
    @Test(arguments: Engine.available)
    func signingInAfterSigningSomeoneUpTellsNothing(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            try await server.enablePasswords()
            _ = try await server.signedUp("victim@example.com", password: "victim's own password", outbox: outbox)
            let attacker = server.anonymous()
            var answers: [String: TestClient.Reply] = [:]
            for address in ["victim@example.com", "stranger@example.com"] {
                let signUp = try await attacker.post(
                    "accounts/signup", ["email": .string(address), "password": "attacker's choice"], scope: "public")
                #expect(signUp.status == 200 && signUp["status"] == "CHECK_MAIL", "\(signUp.text)")
                answers[address] = try await attacker.post(
                    "accounts/signin", ["email": .string(address), "password": "attacker's choice"], scope: "public")
            }
            let (known, unknown) = (try #require(answers["victim@example.com"]), try #require(answers["stranger@example.com"]))
            #expect(known.status == 401 && unknown.status == 401)
            #expect(known.serverErrorCode == unknown.serverErrorCode)
            #expect(known["reason"] == unknown["reason"], "\(known.text) / \(unknown.text)")
            // The same as a wrong password and an unknown address.
            let wrong = try await attacker.post(
                "accounts/signin", ["email": "victim@example.com", "password": "not it at all"], scope: "public")
            let nobody = try await attacker.post(
                "accounts/signin", ["email": "nobody@example.com", "password": "not it at all"], scope: "public")
            #expect(Set([known, unknown, wrong, nobody].map(\.text.count)).count == 1)
            #expect(Set([known, unknown, wrong, nobody].compactMap { $0["reason"]?.string }).count == 1)
            // The victim's account still opens with the victim's password.
            let victim = try await attacker.post(
                "accounts/signin", ["email": "victim@example.com", "password": "victim's own password"], scope: "public")
            #expect(victim.status == 200, "\(victim.text)")
        }
    }

    /// An unverified address fails as a wrong password does towards the throttle too, so the
    /// answer that follows the fifth try is the same for both.
    @Test func unverifiedAndWrongPasswordCountAlikeTowardsTheThrottle() async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(.sqlite, outbox: outbox) { server in
            try await server.enablePasswords()
            _ = try await server.signedUp("victim@example.com", password: "victim's own password", outbox: outbox)
            let attacker = server.anonymous()
            var last: [String: String?] = [:]
            for address in ["victim@example.com", "stranger@example.com"] {
                _ = try await attacker.post(
                    "accounts/signup", ["email": .string(address), "password": "attacker's choice"], scope: "public")
                var codes: [String?] = []
                for _ in 0..<12 {
                    codes.append(
                        try await attacker.post(
                            "accounts/signin", ["email": .string(address), "password": "attacker's choice"], scope: "public"
                        ).serverErrorCode)
                }
                last[address] = codes.last ?? nil
                #expect(codes.contains("THROTTLED"), "\(address): \(codes)")
            }
            #expect(last["victim@example.com"] == last["stranger@example.com"])
        }
    }
}
