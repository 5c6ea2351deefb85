import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Nothing of the dashboard without an operator session; signing in and out; CSRF.
@Suite("Dashboard sign-in and CSRF")
struct DashboardAuthTests {
    @Test("every page redirects to the sign-in page without a session", arguments: Engine.available)
    func pagesNeedASession(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            let root = try await browser.get("/")
            #expect(root.status == 303)
            #expect(root.location == "/dashboard")
            for path in [
                "/dashboard", "/dashboard/container?c=\(DashboardServer.container)", "/dashboard/zones?c=x",
                "/dashboard/query?c=x", "/dashboard/schema?c=x", "/dashboard/live", "/dashboard/audit",
            ] {
                let page = try await browser.get(path)
                #expect(page.status == 303, "\(path)")
                #expect(page.location?.hasPrefix("/dashboard/signin?next=") == true, "\(path)")
                #expect(!page.body.contains(DashboardServer.container))
            }
            let events = try await browser.get("/dashboard/live/events")
            #expect(events.status == 401)
            let create = try await browser.post("/dashboard/containers", ["identifier": "iCloud.sneaky", "csrf": "x"])
            #expect(create.status == 303)
            #expect(try await !server.server.store.listContainers().contains("iCloud.sneaky"))
        }
    }

    @Test("an operator signs in with the right password only, and signs out", arguments: Engine.available)
    func signInAndOut(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            let wrong = try await browser.signIn(password: "wrong password")
            #expect(wrong.status == 401)
            #expect(wrong.body.contains("Wrong name or password"))
            let unknown = try await browser.signIn(name: "nobody")
            #expect(unknown.status == 401)

            let right = try await browser.signIn()
            #expect(right.status == 303)
            #expect(right.location == "/dashboard")
            let cookie = right.headers["set-cookie"].first { $0.hasPrefix("nimbus_operator=") } ?? ""
            #expect(cookie.contains("HttpOnly"))
            #expect(cookie.contains("SameSite=Strict"))
            let home = try await browser.get("/dashboard")
            #expect(home.status == 200)
            #expect(home.body.contains(DashboardServer.container))

            let csrf = try #require(Browser.hidden("csrf", in: home.body))
            let out = try await browser.post("/dashboard/signout", ["csrf": csrf])
            #expect(out.status == 303)
            #expect(try await browser.get("/dashboard").status == 303)
        }
    }

    @Test("a sign-in form without its CSRF cookie is refused")
    func signInNeedsItsCSRFToken() async throws {
        try await DashboardServer.with { _, browser in
            _ = try await browser.get("/dashboard/signin")
            await browser.setCookie("nimbus_operator_signin", nil)
            let page = try await browser.post(
                "/dashboard/signin", ["csrf": "0000", "name": DashboardServer.operatorName, "password": DashboardServer.password])
            #expect(page.status == 403)
            #expect(await browser.cookies["nimbus_operator"] == nil)
        }
    }

    @Test("a change without the session's CSRF token is refused and changes nothing", arguments: Engine.available)
    func csrfRefused(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            try await browser.signIn()
            let missing = try await browser.post("/dashboard/containers", ["identifier": "iCloud.one"])
            #expect(missing.status == 403)
            let forged = try await browser.post("/dashboard/containers", ["identifier": "iCloud.one", "csrf": String(repeating: "a", count: 64)])
            #expect(forged.status == 403)
            #expect(try await !server.server.store.listContainers().contains("iCloud.one"))

            let home = try await browser.get("/dashboard")
            let csrf = try #require(Browser.hidden("csrf", in: home.body))
            let created = try await browser.post("/dashboard/containers", ["identifier": "iCloud.one", "csrf": csrf])
            #expect(created.status == 200)
            #expect(created.body.contains("Container iCloud.one created"))
            #expect(try await server.server.store.listContainers().contains("iCloud.one"))
        }
    }

    @Test("failed sign-ins are throttled")
    func signInThrottled() async throws {
        try await DashboardServer.with { _, browser in
            var statuses: [Int] = []
            for _ in 0..<12 { statuses.append(try await browser.signIn(password: "not the password").status) }
            #expect(statuses.contains(429))
            #expect(try await browser.signIn().status == 429)
        }
    }

    @Test("bad input gets an error page, not a crash")
    func badInput() async throws {
        try await DashboardServer.with { _, browser in
            try await browser.signIn()
            #expect(try await browser.get("/dashboard/container?c=iCloud.none").status == 404)
            #expect(try await browser.get("/dashboard/container").status == 400)
            #expect(try await browser.get("/dashboard/zones?c=\(DashboardServer.container)&env=staging").status == 400)
            let record = try await browser.get("/dashboard/record?c=\(DashboardServer.container)&record=missing")
            #expect(record.status == 404)
            let query = try await browser.get("/dashboard/query?c=\(DashboardServer.container)&recordType=Item&ff0=n&fc0=BOGUS")
            #expect(query.status == 400)
            let next = try await browser.get("/dashboard/signin?next=https://evil.example")
            #expect(next.status == 303)
            #expect(next.location == "/dashboard")
        }
    }
}
