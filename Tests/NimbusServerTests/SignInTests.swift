import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Built-in accounts through the JSON API: sign-up, verification, sign-in on several
/// devices, password reset, indistinguishable failures and throttling.
@Suite("Built-in accounts")
struct SignInTests {
    @Test(arguments: Engine.available)
    func signingUpVerifyingAndSigningInOnTwoDevices(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            let anonymous = server.anonymous()
            let off = try await anonymous.post(
                "accounts/signup", ["email": "carol@example.com", "password": "correct horse"], scope: "public")
            #expect(off.serverErrorCode == "ACCESS_DENIED", "built-in accounts are off by default")
            try await server.enablePasswords()

            let signUp = try await anonymous.post(
                "accounts/signup", ["email": "Carol@Example.com", "password": "correct horse"], scope: "public")
            #expect(signUp["status"] == "CHECK_MAIL")
            let code = try #require(outbox.lastCode(to: "Carol@Example.com"))
            let early = try await anonymous.post(
                "accounts/signin", ["email": "carol@example.com", "password": "correct horse"], scope: "public")
            #expect(early.serverErrorCode == "AUTHENTICATION_FAILED", "not verified yet")
            let wrongCode = try await anonymous.post(
                "accounts/verify", ["email": "carol@example.com", "code": "0000000000000000"], scope: "public")
            #expect(wrongCode.serverErrorCode == "AUTHENTICATION_FAILED")
            let verified = try await anonymous.post(
                "accounts/verify", ["email": "carol@example.com", "code": .string(code)], scope: "public")
            #expect(verified["status"] == "VERIFIED")

            var devices: [TestClient] = []
            var sessionIDs: [String] = []
            for device in ["laptop", "phone"] {
                let reply = try await anonymous.post(
                    "accounts/signin",
                    ["email": "carol@example.com", "password": "correct horse", "deviceName": .string(device),
                     "platform": "test"],
                    scope: "public")
                #expect(reply.status == 200)
                var client = anonymous
                client.webAuthToken = reply["ckWebAuthToken"]?.string
                devices.append(client)
                sessionIDs.append(reply["sessionID"]?.string ?? "")
            }
            #expect(Set(sessionIDs).count == 2, "one session per device")
            let names = try await devices.asyncMap { try await $0.get("users/current")["userRecordName"]?.string }
            #expect(names[0] != nil && names[0] == names[1], "one user record name per container")
            let saved = try await devices[0].modify("_defaultZone", [op("create", "note-1", fields: ["title": "hi"])])
            #expect(saved.status == 200)
            let seen = try await devices[1].post("records/lookup", ["records": [["recordName": "note-1"]]])
            #expect(seen.records.first?["recordName"] == "note-1")
            let listed = try await devices[1].post("sessions/list", [:])
            #expect(listed["sessions"]?.array?.compactMap { $0["deviceName"]?.string } == ["laptop", "phone"])
        }
    }

    @Test(arguments: Engine.available)
    func aWrongPasswordAndAnUnknownAddressAnswerAlike(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            try await server.enablePasswords()
            _ = try await server.signedUp("dana@example.com", outbox: outbox)
            let anonymous = server.anonymous()
            let wrong = try await anonymous.post(
                "accounts/signin", ["email": "dana@example.com", "password": "not her password"], scope: "public")
            let unknown = try await anonymous.post(
                "accounts/signin", ["email": "nobody@example.com", "password": "not her password"], scope: "public")
            #expect(wrong.status == 401)
            #expect(wrong.status == unknown.status)
            #expect(wrong.serverErrorCode == unknown.serverErrorCode)
            #expect(wrong["reason"] == unknown["reason"])
            // Sign-up and "forgot password" answer the same whether the address has an account.
            for operation in ["accounts/signup", "accounts/password/forgot"] {
                let known = try await anonymous.post(
                    operation, ["email": "dana@example.com", "password": "whatever1"], scope: "public")
                let fresh = try await anonymous.post(
                    operation, ["email": "erin@example.com", "password": "whatever1"], scope: "public")
                #expect(known.status == 200 && fresh.status == 200)
                #expect(known["status"] == fresh["status"])
            }
        }
    }

    @Test(arguments: Engine.available)
    func failedSignInsAreThrottledWithRetryAfter(engine: Engine) async throws {
        let outbox = MailOutbox()
        let clock = ManualWallClock(millis: 1_800_000_000_000)
        try await TestServer.withSignIn(engine, outbox: outbox, clock: clock) { server in
            try await server.enablePasswords()
            _ = try await server.signedUp("fay@example.com", outbox: outbox)
            let anonymous = server.anonymous()
            let attempt = { (password: String) in
                try await anonymous.post(
                    "accounts/signin", ["email": "fay@example.com", "password": .string(password)], scope: "public")
            }
            for _ in 0..<5 { #expect(try await attempt("wrong password").status == 401) }
            let throttled = try await attempt("correct horse")
            #expect(throttled.status == 429)
            #expect(throttled.serverErrorCode == "THROTTLED")
            let wait = try #require(throttled["retryAfter"]?.int64)
            #expect(wait > 0 && wait <= 300)
            clock.advance(by: .seconds(Int64(wait)))
            #expect(try await attempt("correct horse").status == 200)
        }
    }

    @Test(arguments: Engine.available)
    func resettingAPasswordRevokesEverySession(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            try await server.enablePasswords()
            let (client, _) = try await server.signedUp("gus@example.com", outbox: outbox)
            let anonymous = server.anonymous()
            _ = try await anonymous.post("accounts/password/forgot", ["email": "gus@example.com"], scope: "public")
            let code = try #require(outbox.lastCode(to: "gus@example.com"))
            let reset = try await anonymous.post(
                "accounts/password/reset", ["email": "gus@example.com", "code": .string(code), "password": "battery staple"],
                scope: "public")
            #expect(reset["status"] == "PASSWORD_SET")
            #expect(try await client.get("users/current").serverErrorCode == "AUTHENTICATION_FAILED")
            let reused = try await anonymous.post(
                "accounts/password/reset", ["email": "gus@example.com", "code": .string(code), "password": "another one"],
                scope: "public")
            #expect(reused.serverErrorCode == "AUTHENTICATION_FAILED", "a code works once")
            let signIn = try await anonymous.post(
                "accounts/signin", ["email": "gus@example.com", "password": "battery staple"], scope: "public")
            #expect(signIn.status == 200)
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
