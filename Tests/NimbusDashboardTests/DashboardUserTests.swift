import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// Users: the list, private data only where the container allows it (audited), deletion.
@Suite("Dashboard users and private data")
struct DashboardUserTests {
    static let c = DashboardServer.container

    @Test("a user's private database opens only where the container allows it, and every view is audited", arguments: Engine.available)
    func privateDataNeedsTheSetting(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            _ = try await server.userToken("alice")
            let alice = try #require(try await server.server.store.user(named: "alice", container: Self.c))
            try await browser.signIn()
            let users = try await browser.get("/dashboard/users?c=\(Self.c)")
            #expect(users.body.contains("alice"))
            let user = try await browser.get("/dashboard/user?c=\(Self.c)&u=\(alice.recordName)")
            #expect(user.status == 200)
            #expect(user.body.contains("does not let operators read"))

            let closed = try await browser.get("/dashboard/zones?c=\(Self.c)&u=\(alice.recordName)")
            #expect(closed.status == 403)
            #expect(try await server.server.store.auditLog(limit: 10).isEmpty)

            let csrf = try #require(Browser.hidden("csrf", in: user.body))
            let allowed = try await browser.post("/dashboard/container/private-access", ["csrf": csrf, "c": Self.c, "allowed": "on"])
            #expect(allowed.status == 200)
            let userPage = try await browser.get("/dashboard/user?c=\(Self.c)&u=\(alice.recordName)")
            #expect(userPage.body.contains("Notification collection"))
            #expect(try await server.server.store.auditLog(limit: 10).contains { $0.action == "private data: notifications/changes" })
            let open = try await browser.get("/dashboard/zones?c=\(Self.c)&u=\(alice.recordName)")
            #expect(open.status == 200)
            #expect(open.body.contains("private database of \(alice.recordName)"))
            #expect(open.body.contains("_defaultZone"))
            let audit = try await server.server.store.auditLog(limit: 10)
            #expect(audit.contains { $0.action == "private data: zones/list" && $0.detail.contains("alice") })
            let page = try await browser.get("/dashboard/audit")
            #expect(page.body.contains("private data: zones/list"))

            let write = try await browser.post(
                "/dashboard/record/save",
                ["csrf": csrf, "c": Self.c, "u": alice.recordName, "recordType": "Note", "newName": "title", "newValue": "x"])
            #expect(write.status == 403)
        }
    }

    @Test("deleting a user through the dashboard removes their account")
    func deleteUser() async throws {
        try await DashboardServer.with { server, browser in
            _ = try await server.userToken("bob")
            let bob = try #require(try await server.server.store.user(named: "bob", container: Self.c))
            try await browser.signIn()
            let page = try await browser.get("/dashboard/user?c=\(Self.c)&u=\(bob.recordName)")
            let csrf = try #require(Browser.hidden("csrf", in: page.body))
            #expect(!page.body.contains("checked"))
            let discoverable = try await browser.post(
                "/dashboard/user/discoverable", ["csrf": csrf, "c": Self.c, "u": bob.recordName, "discoverable": "on"])
            #expect(discoverable.body.contains("bob is discoverable"))
            #expect(discoverable.body.contains("name=\"discoverable\" checked"))
            let found = try await server.server.store.discoverableUsers(emailAddresses: ["bob@example.com"], recordNames: [], container: Self.c)
            #expect(found.map(\.name) == ["bob"])
            let wrong = try await browser.post("/dashboard/user/delete", ["csrf": csrf, "c": Self.c, "u": bob.recordName, "confirm": "nope"])
            #expect(wrong.body.contains("Not deleted"))
            let deleted = try await browser.post("/dashboard/user/delete", ["csrf": csrf, "c": Self.c, "u": bob.recordName, "confirm": "bob"])
            #expect(deleted.status == 303)
            #expect(try await server.server.store.user(named: "bob", container: Self.c) == nil)
        }
    }

    @Test("an operator grants and revokes a security role on the user's page; a user's token cannot", arguments: Engine.available)
    func securityRoles(engine: Engine) async throws {
        try await DashboardServer.with(engine) { server, browser in
            let store = server.server.store
            let token = try await server.userToken("carol")
            let carol = try #require(try await store.user(named: "carol", container: Self.c))
            _ = try await store.updateSchema(
                try SchemaFile.parse("DEFINE SCHEMA CREATE ROLE editors; RECORD TYPE Draft ( text STRING, GRANT READ, CREATE TO editors );"),
                container: Self.c, environment: .development, expectedVersion: 0)
            let draft: JSON = [
                "operations": [["operationType": "create", "record": ["recordName": "d1", "recordType": "Draft", "fields": ["text": ["value": "x"]]]]]
            ]
            let refused = try await server.api("records/modify", draft, webAuthToken: token)
            #expect(refused["records"]?.array?.first?["serverErrorCode"] == "ACCESS_DENIED")

            // Someone with only a user's web auth token is sent to the sign-in page.
            let outsider = Browser(baseURL: server.server.baseURL)
            let forged = try await outsider.post(
                "/dashboard/user/role?ckWebAuthToken=\(token)",
                ["c": Self.c, "u": carol.recordName, "env": "development", "role": "editors", "grant": "on"])
            try await outsider.close()
            #expect(forged.status == 303)
            #expect(forged.location == "/dashboard/signin")
            #expect(try await store.schema(container: Self.c, environment: .development).schema.roleMembers.isEmpty)

            try await browser.signIn()
            let page = try await browser.get("/dashboard/user?c=\(Self.c)&u=\(carol.recordName)")
            #expect(page.body.contains("Security roles"))
            #expect(page.body.contains("The production schema declares no roles."))
            let csrf = try #require(Browser.hidden("csrf", in: page.body))
            let granted = try await browser.post(
                "/dashboard/user/role", ["csrf": csrf, "c": Self.c, "u": carol.recordName, "env": "development", "role": "editors", "grant": "on"])
            #expect(granted.status == 200)
            #expect(granted.body.contains("carol now holds role editors in development."))
            #expect(granted.body.contains("id=\"role-development-editors\" class=\"danger\">Revoke"))
            let allowed = try await server.api("records/modify", draft, webAuthToken: token)
            #expect(allowed["records"]?.array?.first?["recordName"] == "d1")
            #expect(try await store.auditLog(limit: 5).contains { $0.action == "grant role" && $0.detail.contains("carol") })

            let unknown = try await browser.post(
                "/dashboard/user/role", ["csrf": csrf, "c": Self.c, "u": carol.recordName, "env": "production", "role": "editors", "grant": "on"])
            #expect(unknown.body.contains("Not changed: the production schema of \(Self.c) declares no role"))

            let revoked = try await browser.post(
                "/dashboard/user/role", ["csrf": csrf, "c": Self.c, "u": carol.recordName, "env": "development", "role": "editors", "grant": "off"])
            #expect(revoked.body.contains("carol no longer holds role editors in development."))
            let again = try await server.api(
                "records/lookup", ["records": [["recordName": "d1"]]], webAuthToken: token)
            #expect(again["records"]?.array?.first?["serverErrorCode"] == "ACCESS_DENIED")
        }
    }
}
