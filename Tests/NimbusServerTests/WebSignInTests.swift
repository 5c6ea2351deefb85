import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// CloudKit's web flow: AUTHENTICATION_REQUIRED with a `redirectURL`, the sign-in page, its
/// CSRF check and the redirect back with `ckWebAuthToken` to allowed origins only.
@Suite("Web sign-in flow")
struct WebSignInTests {
    @Test(arguments: Engine.available)
    func aPrivateRequestWithoutATokenGetsTheSignInURLAndTheFlowHandsBackAToken(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            let anonymous = server.anonymous()
            let before = try await anonymous.get("users/current")
            #expect(before.status == 421)
            #expect(before.serverErrorCode == "AUTHENTICATION_REQUIRED")
            #expect(before["redirectURL"] == nil, "without built-in accounts there is nowhere to sign in")

            try await server.enablePasswords()
            _ = try await server.signedUp("hana@example.com", outbox: outbox)
            let required = try await anonymous.post("records/query", ["query": ["recordType": "Item"]])
            #expect(required.status == 421)
            let redirectURL = try #require(required["redirectURL"]?.string)
            #expect(redirectURL == "\(server.server.baseURL)/signin/\(TestServer.container)/development")

            let browser = FormBrowser()
            defer { Task { try? await browser.shutdown() } }
            let target = "https://app.example/done?x=1"
            let url = redirectURL + "?redirect=" + percentEncoded(target)
            let page = try await browser.get(url)
            #expect(page.status == 200)
            #expect(page.headers["Content-Type"].first?.hasPrefix("text/html") == true)
            let cookie = try #require(page.csrfCookie)
            #expect(page.csrfField == cookie)

            let form = [("email", "hana@example.com"), ("password", "correct horse"), ("redirect", target)]
            let noToken = try await browser.post(url, form: form, cookie: cookie)
            #expect(noToken.status == 403, "a form without its CSRF token is refused")
            let wrongToken = try await browser.post(url, form: form + [("csrf", "0123")], cookie: cookie)
            #expect(wrongToken.status == 403)

            let signedIn = try await browser.post(url, form: form + [("csrf", cookie)], cookie: cookie)
            #expect(signedIn.status == 303)
            let location = try #require(signedIn.headers["Location"].first)
            let components = try #require(URLComponents(string: location))
            #expect(components.host == "app.example")
            #expect(components.queryItems?.first { $0.name == "x" }?.value == "1")
            var client = anonymous
            client.webAuthToken = components.queryItems?.first { $0.name == "ckWebAuthToken" }?.value
            #expect(try await client.get("users/current").status == 200)
            let sessions = try await client.post("sessions/list", [:])
            #expect(sessions["sessions"]?.array?.last?["platform"] == "web")
        }
    }

    @Test(arguments: Engine.available)
    func aRedirectToAnOriginNotAllowedIsRefused(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            try await server.enablePasswords(origins: ["https://app.example"])
            _ = try await server.signedUp("ida@example.com", outbox: outbox)
            let browser = FormBrowser()
            defer { Task { try? await browser.shutdown() } }
            let base = "\(server.server.baseURL)/signin/\(TestServer.container)/development"
            for evil in ["https://evil.example/", "https://app.example.evil.example/", "http://app.example/",
                         "https://user@app.example/", "javascript:alert(1)", "//evil.example/"] {
                let page = try await browser.get(base + "?redirect=" + percentEncoded(evil))
                #expect(page.status == 400, "\(evil)")
                #expect(page.headers["Location"].isEmpty)
            }
            // Posting a bad target with a good form is refused too, and hands out no token.
            let good = try await browser.get(base)
            let cookie = try #require(good.csrfCookie)
            let posted = try await browser.post(
                base,
                form: [("email", "ida@example.com"), ("password", "correct horse"), ("redirect", "https://evil.example/"),
                       ("csrf", cookie)],
                cookie: cookie)
            #expect(posted.status == 400)
            #expect(posted.headers["Location"].isEmpty)
            #expect(try await server.server.store.listSessions(container: nil, userName: nil).count == 1)
        }
    }
}

/// CloudKit JS's sign-in window: the page opened as `redirectURL` is (no `redirect`) hands the
/// token to `window.opener` with `postMessage`, addressed to the allowed origins only.
@Suite("Web sign-in window")
struct WebSignInWindowTests {
    @Test(arguments: Engine.available)
    func signingInWithoutARedirectPostsTheTokenToTheAllowedOriginsOnly(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            try await server.enablePasswords(origins: ["https://app.example", "http://localhost:5173/"])
            _ = try await server.signedUp("jo@example.com", outbox: outbox)
            let redirectURL = try #require(try await server.anonymous().get("users/current")["redirectURL"]?.string)
            let browser = FormBrowser()
            do {
                let page = try await browser.get(redirectURL)
                let cookie = try #require(page.csrfCookie)
                let answer = try await browser.post(
                    redirectURL,
                    form: [("email", "jo@example.com"), ("password", "correct horse"), ("redirect", ""), ("csrf", cookie)],
                    cookie: cookie)
                try await browser.shutdown()
                #expect(answer.status == 200)
                #expect(answer.headers["Location"].isEmpty)
                #expect(answer.headers["Cache-Control"].first == "no-store")
                #expect(answer.headers["Referrer-Policy"].first == "no-referrer")

                // One script, allowed by a nonce, that posts {ckSession} to each allowed origin.
                let policy = try #require(answer.headers["Content-Security-Policy"].first)
                let nonce = try #require(policy.firstMatch(of: /script-src 'nonce-([0-9a-f]{32})'/)?.1)
                #expect(policy.contains("default-src 'none'"))
                #expect(answer.text.contains("<script nonce=\"\(nonce)\">"))
                #expect(answer.text.components(separatedBy: "<script").count == 2)
                #expect(answer.text.contains(#"var origins = ["https://app.example","http://localhost:5173"];"#))
                #expect(answer.text.contains("window.opener.postMessage(message, origin)"))
                #expect(!answer.text.contains("\"*\""))
                let token = try #require(answer.text.firstMatch(of: /var message = \{ckSession: "([0-9a-f]{64})"\};/)?.1)
                // Without an opener, the first allowed origin, as a redirect without a target.
                #expect(answer.text.contains("window.location.replace(\"https://app.example/?ckWebAuthToken=\(token)\")"))

                var client = server.anonymous()
                client.webAuthToken = String(token)
                #expect(try await client.get("users/current").status == 200)
            } catch {
                try? await browser.shutdown()
                throw error
            }
        }
    }
}

/// Percent-encoding for test URLs.
func percentEncoded(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
}
