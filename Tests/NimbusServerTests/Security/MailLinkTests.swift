import Foundation
import NimbusProtocol
import NimbusServer
import NimbusTestSupport
import Testing

/// The links in sign-in mail never follow a host a client names (docs/SECURITY.md): a
/// verification or reset code mailed to a victim must not travel to an attacker's host.
@Suite("Security: mailed links")
struct MailLinkTests {
    /// Sends every mail the accounts API sends, each request with `headers`: a verification
    /// code (new address), a note (address with an account), a reset code, a note (no account).
    static func everyMail(_ server: TestServer, outbox: MailOutbox, headers: [(String, String)]) async throws -> [String] {
        let anonymous = server.anonymous()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let known = "known-\(suffix)@example.com"
        _ = try await server.signedUp(known, outbox: outbox)
        let before = outbox.all.count
        let requests: [(String, JSON)] = [
            ("accounts/signup", ["email": .string("new-\(suffix)@example.com"), "password": "correct horse"]),
            ("accounts/signup", ["email": .string(known), "password": "another password"]),
            ("accounts/password/forgot", ["email": .string(known)]),
            ("accounts/password/forgot", ["email": .string("nobody-\(suffix)@example.com")]),
        ]
        var statuses: [Int] = []
        for (operation, body) in requests {
            statuses.append(try await anonymous.post(operation, body, scope: "public", headers: headers).status)
        }
        #expect(statuses.allSatisfy { $0 == 200 || $0 == 400 }, "\(statuses)")
        return outbox.all.dropFirst(before).map(\.body)
    }

    /// The absolute URLs in a mail body.
    static func links(_ body: String) -> [String] {
        body.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
            .filter { $0.hasPrefix("http://") || $0.hasPrefix("https://") }
            .map { $0.hasSuffix(".") || $0.hasSuffix(",") ? String($0.dropLast()) : $0 }
    }

    @Test(arguments: Engine.available, Poisoning.allCases)
    func withoutAPublicURLMailLinksPointAtTheServersOwnAddress(engine: Engine, poisoning: Poisoning) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(engine, outbox: outbox) { server in
            try await server.enablePasswords()
            let mails = try await Self.everyMail(server, outbox: outbox, headers: poisoning.headers)
            #expect(mails.count == 4)
            for body in mails {
                #expect(!body.contains(Poisoning.attackerHost), "\(body)")
                let links = Self.links(body)
                #expect(!links.isEmpty, "\(body)")
                for link in links {
                    #expect(link.hasPrefix("http://127.0.0.1:\(server.server.port)/"), "\(link)")
                }
            }
        }
    }

    @Test(arguments: Engine.available, Poisoning.allCases)
    func withAPublicURLMailLinksStartWithIt(engine: Engine, poisoning: Poisoning) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(
            engine, outbox: outbox,
            configure: {
                $0.origin.publicURL = try! PublicURL("https://sync.example.com")
                // Even from a proxy it trusts, the server never takes a mailed link's host from a header.
                $0.origin.trustedProxies = [try! AddressRange("127.0.0.0/8")]
            }
        ) { server in
            try await server.enablePasswords()
            let mails = try await Self.everyMail(server, outbox: outbox, headers: poisoning.headers)
            // A request naming another host is refused before it sends anything.
            #expect(mails.count == (poisoning == .forwardedProto ? 4 : 0), "\(mails)")
            for body in mails {
                for link in Self.links(body) {
                    #expect(link.hasPrefix("https://sync.example.com/signin/") || link.hasPrefix("https://sync.example.com/database/1/"), "\(link)")
                }
            }
        }
    }

    @Test(arguments: Engine.available)
    func aTrustedProxysForwardedHostStillNeverReachesAMail(engine: Engine) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(
            engine, outbox: outbox, configure: { $0.origin.trustedProxies = [try! AddressRange("127.0.0.1")] }
        ) { server in
            try await server.enablePasswords()
            let mails = try await Self.everyMail(
                server, outbox: outbox, headers: [("X-Forwarded-Host", "proxied.example"), ("X-Forwarded-Proto", "https")])
            #expect(mails.count == 4)
            for link in mails.flatMap(Self.links) {
                #expect(link.hasPrefix("http://127.0.0.1:\(server.server.port)/"), "\(link)")
            }
        }
    }

    /// The sign-in page's forms link to themselves by path, and the mail its sign-up sends
    /// follows the same rule as the API's.
    @Test(arguments: Poisoning.allCases)
    func theSignInPagesSignUpMailsTheServersOwnAddress(poisoning: Poisoning) async throws {
        let outbox = MailOutbox()
        try await TestServer.withSignIn(.sqlite, outbox: outbox) { server in
            try await server.enablePasswords()
            let browser = FormBrowser()
            do {
                try await Self.signUpThroughThePage(server, browser, outbox, poisoning)
            } catch {
                try? await browser.shutdown()
                throw error
            }
            try await browser.shutdown()
        }
    }

    static func signUpThroughThePage(
        _ server: TestServer, _ browser: FormBrowser, _ outbox: MailOutbox, _ poisoning: Poisoning
    ) async throws {
        let page = "\(server.server.baseURL)/signin/\(TestServer.container)/development/signup"
        let form = try await browser.get(page)
        #expect(!form.text.contains(Poisoning.attackerHost))
        let posted = try await browser.post(
            page, form: [("csrf", form.csrfField ?? ""), ("email", "page@example.com"), ("password", "correct horse")],
            cookie: form.csrfCookie, headers: poisoning.headers)
        #expect(posted.status == 200, "\(posted.text)")
        #expect(!posted.text.contains(Poisoning.attackerHost))
        let mail = try #require(outbox.all.last { $0.to == "page@example.com" })
        #expect(Self.links(mail.body).allSatisfy { $0.hasPrefix("http://127.0.0.1:\(server.server.port)/") }, "\(mail.body)")
    }
}
