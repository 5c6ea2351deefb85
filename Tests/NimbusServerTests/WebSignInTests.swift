import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
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

/// Percent-encoding for test URLs.
func percentEncoded(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
}
