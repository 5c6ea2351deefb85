import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// The SDK's other two ways in, end to end against a real server: an identity provider's ID
/// token exchanged for a session, and the server's sign-in page opened at the SDK's web-flow
/// URL, filled in as a browser would, its redirect handed back to the SDK.
@Suite struct AccountSignInWaysTests {
    @Test func anIDTokenSignsInAndTheSamePersonIsOneUserOnEveryDevice() async throws {
        let issuer = TestIssuer()
        try await LiveServer.with(configure: { $0.signIn.identityKeys = issuer }) { live in
            try await live.server.store.addIdentityIssuer(issuer.registration, container: LiveServer.containerID)
            let phone = try await Account(container: live.anonymousContainer())
            let changes = await phone.changes()
            let token = try await issuer.idToken(subject: "person-1", nonce: "n-1")
            let user = try await phone.signIn(idToken: token, nonce: "n-1", deviceName: "phone", platform: "ios")
            #expect(try await nextChange(changes) == .signedIn(userRecordName: user))
            #expect(try await phone.container.userRecordID().recordName == user)
            let session = try #require(try await phone.sessions().first)
            #expect(session.deviceName == "phone" && session.platform == "ios" && session.isCurrent)

            let laptop = try await Account(container: live.anonymousContainer())
            #expect(try await laptop.signIn(idToken: try await issuer.idToken(subject: "person-1"), deviceName: "laptop") == user)
            #expect(try await laptop.sessions().count == 2)

            // The same token twice, or a nonce that is not the token's: refused, and nobody is signed in.
            let other = try await Account(container: live.anonymousContainer())
            for (idToken, nonce) in [(token, "n-1"), (try await issuer.idToken(subject: "person-2", nonce: "n-2"), "n-3")] {
                let error = await #expect(throws: NimbusError.self) { try await other.signIn(idToken: idToken, nonce: nonce) }
                #expect(error?.code == .notAuthenticated)
            }
            #expect(await other.userRecordName == nil)
        }
    }

    @Test func theSignInPageAtTheWebFlowURLHandsTheSessionBackToTheSDK() async throws {
        let mailBox = MailBox()
        try await LiveServer.withAccounts(mailBox) { live in
            let registration = try await Account(container: live.anonymousContainer())
            try await live.register("ada@example.com", on: registration, mailBox: mailBox)
            let account = try await Account(container: live.anonymousContainer())
            let url = account.webSignInURL(callbackURL: URL(string: "https://app.example/done?state=s1")!)

            let browser = HTTPClient(
                eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
            do {
                try await Self.signIn(at: url, with: browser, live: live, account: account)
                try await browser.shutdown()
            } catch {
                try? await browser.shutdown()
                throw error
            }
        }
    }

    /// Opens the page at `url` as a browser (the form, its cookie), posts Ada's address and
    /// password, and hands the redirect to the SDK.
    static func signIn(at url: URL, with browser: HTTPClient, live: LiveServer, account: Account) async throws {
        let form = try await browser.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(120))
        #expect(form.status == .ok)
        let cookie = try #require(form.headers["Set-Cookie"].first { $0.hasPrefix("nimbus_csrf=") }?.split(separator: ";").first)
        let html = String(buffer: try await form.body.collect(upTo: 1 << 20))
        let action = try #require(Self.attribute("action", in: html, after: "<form"))
        var post = HTTPClientRequest(url: action.hasPrefix("/") ? live.baseURL.absoluteString + action : action)
        post.method = .POST
        post.headers.add(name: "Cookie", value: String(cookie))
        post.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let fields = [
            ("csrf", try #require(Self.attribute("value", in: html, after: "name=\"csrf\""))),
            ("redirect", try #require(Self.attribute("value", in: html, after: "name=\"redirect\""))),
            ("email", "ada@example.com"), ("password", "correct horse"),
        ]
        post.body = .bytes(
            ByteBuffer(
                string: fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
                    .joined(separator: "&")))
        let answer = try await browser.execute(post, timeout: .seconds(120))
        #expect(answer.status == .seeOther)
        let location = try #require(answer.headers["Location"].first.flatMap(URL.init(string:)))
        #expect(location.absoluteString.hasPrefix("https://app.example/done?state=s1&ckWebAuthToken="))

        let user = try await account.completeWebSignIn(callbackURL: location)
        #expect(try await account.container.userRecordID().recordName == user)
        let session = try #require(try await account.sessions().first { $0.isCurrent })
        #expect(session.platform == "web")
        #expect(await account.session?.sessionID == session.sessionID)
    }

    /// The value of the first `name="…"` attribute after `marker` in a page, HTML entities decoded.
    static func attribute(_ name: String, in html: String, after marker: String) -> String? {
        guard let start = html.range(of: marker), let attribute = html[start.upperBound...].range(of: "\(name)=\"")
        else { return nil }
        let value = html[attribute.upperBound...].prefix { $0 != "\"" }
        return [("&quot;", "\""), ("&#39;", "'"), ("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&")].reduce(String(value)) {
            $0.replacingOccurrences(of: $1.0, with: $1.1)
        }
    }
}
