import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// Every path of the dashboard. Pages take their arguments as query parameters (`c`
/// container, `env` environment, `zone`, `record`), so names with any characters travel
/// safely; changes are POSTed forms carrying the session's CSRF token.
enum DashboardRoutes {
    static let root = "/dashboard"

    static func add(to router: Router<BasicRequestContext>, app: DashboardApp) {
        router.get("/") { _, _ in DashboardApp.redirect(to: root) }
        router.get("/dashboard") { request, _ in await app.page(request) { try await ContainerPages.list($0) } }
        router.get("/dashboard/assets/style.css") { _, _ in StaticFiles.response(Stylesheet.text, type: "text/css") }
        router.get("/dashboard/assets/app.js") { _, _ in StaticFiles.response(Script.text, type: "text/javascript") }
        router.get("/dashboard/signin") { request, _ in await SignInPages.form(app, request) }
        router.post("/dashboard/signin") { request, _ in await SignInPages.signIn(app, request) }
        router.post("/dashboard/signout") { request, _ in await app.action(request) { try await SignInPages.signOut($0) } }

        router.post("/dashboard/containers") { request, _ in await app.action(request) { try await ContainerPages.create($0) } }
        router.get("/dashboard/container") { request, _ in await app.page(request) { try await ContainerPages.show($0) } }
        router.post("/dashboard/container/token") { request, _ in
            await app.action(request) { try await ContainerPages.createToken($0) }
        }
        router.post("/dashboard/container/token/revoke") { request, _ in
            await app.action(request) { try await ContainerPages.revokeToken($0) }
        }
        router.post("/dashboard/container/key") { request, _ in
            await app.action(request) { try await ContainerPages.createKey($0) }
        }
        router.post("/dashboard/container/key/revoke") { request, _ in
            await app.action(request) { try await ContainerPages.revokeKey($0) }
        }
        router.post("/dashboard/container/private-access") { request, _ in
            await app.action(request) { try await ContainerPages.setPrivateAccess($0) }
        }

        router.get("/dashboard/zones") { request, _ in await app.page(request) { try await DataPages.zones($0) } }
        router.get("/dashboard/records") { request, _ in await app.page(request) { try await DataPages.records($0) } }
        router.get("/dashboard/record") { request, _ in await app.page(request) { try await RecordPages.show($0) } }
        router.get("/dashboard/record/new") { request, _ in await app.page(request) { try await RecordPages.new($0) } }
        router.post("/dashboard/record/save") { request, _ in await app.action(request) { try await RecordPages.save($0) } }
        router.post("/dashboard/record/delete") { request, _ in
            await app.action(request) { try await RecordPages.delete($0) }
        }
        router.get("/dashboard/query") { request, _ in await app.page(request) { try await QueryPage.show($0) } }

        router.get("/dashboard/schema") { request, _ in await app.page(request) { try await SchemaPages.show($0) } }
        router.post("/dashboard/schema/deploy") { request, _ in
            await app.action(request) { try await SchemaPages.deploy($0) }
        }
        router.post("/dashboard/schema/development") { request, _ in
            await app.action(request) { try await SchemaPages.saveDevelopment($0) }
        }

        router.get("/dashboard/users") { request, _ in await app.page(request) { try await UserPages.list($0) } }
        router.get("/dashboard/user") { request, _ in await app.page(request) { try await UserPages.show($0) } }
        router.post("/dashboard/user/session/revoke") { request, _ in
            await app.action(request) { try await UserPages.revokeSession($0) }
        }
        router.post("/dashboard/user/discoverable") { request, _ in
            await app.action(request) { try await UserPages.setDiscoverable($0) }
        }
        router.post("/dashboard/user/role") { request, _ in await app.action(request) { try await UserPages.setRole($0) } }
        router.post("/dashboard/user/delete") { request, _ in await app.action(request) { try await UserPages.delete($0) } }

        router.get("/dashboard/live") { request, _ in await app.page(request) { try await LivePage.show($0) } }
        router.get("/dashboard/live/events") { request, _ in await LivePage.events(app, request) }
        router.get("/dashboard/traces") { request, _ in await app.page(request) { try await TracePage.show($0) } }
        router.get("/dashboard/audit") { request, _ in await app.page(request) { try await AuditPage.show($0) } }
    }
}
