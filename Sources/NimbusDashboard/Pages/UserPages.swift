import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// A container's users: the list, a user's sessions (revoke), subscriptions and private
/// database (where the container lets operators read them), and deleting an account the way
/// `accounts/delete` does.
enum UserPages {
    /// `GET /dashboard/users?c=…`.
    static func list(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let users = try await context.app.store.containerUsers(container: container)
        return context.render(
            "users",
            [
                "title": "Users · \(container)", "container": container, "cq": DashboardApp.query([("c", container)]),
                "none": users.isEmpty,
                "users": users.map { user in
                    [
                        "name": user.name, "recordName": user.recordName, "email": user.email ?? "",
                        "q": DashboardApp.query([("c", container), ("u", user.recordName)]),
                    ]
                },
            ])
    }

    /// `GET /dashboard/user?c=…&u=RECORD_NAME`.
    static func show(_ context: PageContext, message: String? = nil) async throws -> Response {
        let (container, recordName, user) = try await requestedUser(context)
        let sessions = try await context.app.store.listSessions(container: container, userName: user.name)
        let privateAccess = try await context.app.store.operatorsMayReadPrivateData(container: container)
        let discoverable = try await !context.app.store.discoverableUsers(
            emailAddresses: [], recordNames: [recordName], container: container
        ).isEmpty
        var values: [String: Any] = [
            "title": user.name, "container": container, "cq": DashboardApp.query([("c", container)]),
            "usersQ": DashboardApp.query([("c", container)]), "message": message as Any,
            "name": user.name, "recordName": recordName, "email": user.email ?? "",
            "sessions": sessions.map { session in
                [
                    "id": session.id, "device": "\(session.device.name) (\(session.device.platform))",
                    "lastSeen": Format.date(session.lastSeenAt), "revoked": session.revoked,
                ] as [String: Any]
            },
            "privateAccess": privateAccess, "discoverable": discoverable,
            "roleEnvironments": try await roleValues(context, container: container, recordName: recordName),
        ]
        if privateAccess {
            values["databases"] = ContainerEnvironment.allCases.map { environment in
                [
                    "environment": environment.rawValue,
                    "q": DashboardApp.query([("c", container), ("env", environment.rawValue), ("u", recordName)]),
                ]
            }
            let answer = try await context.perform(.subscriptionsList, container: container, environment: .development, body: [:])
            values["subscriptions"] = (answer["subscriptions"]?.array ?? []).map { subscription in
                [
                    "id": subscription["subscriptionID"]?.string ?? "",
                    "type": subscription["subscriptionType"]?.string ?? "",
                    "json": subscription.serialized(),
                ]
            }
            let collection = try await context.perform(
                .notificationsChanges, container: container, environment: .development, body: ["resultsLimit": 50])
            values["notifications"] = (collection["notifications"]?.array ?? []).map { ["json": $0.serialized()] }
        }
        return context.render("user", values)
    }

    /// The container `c` and its user `u`.
    static func requestedUser(_ context: PageContext) async throws -> (container: String, recordName: String, user: UserIdentity) {
        let container = try await context.container()
        let recordName = try context.required("u", what: "user")
        guard let user = try await context.app.store.user(recordName: recordName, container: container) else {
            throw DashboardError(status: .notFound, title: "No such user", message: "\(container) has no user \(recordName).")
        }
        return (container, recordName, user)
    }

    /// `POST /dashboard/user/session/revoke`: as `nimbus session revoke`.
    static func revokeSession(_ context: PageContext) async throws -> Response {
        let (container, _, user) = try await requestedUser(context)
        let id = try context.required("session", what: "session ID")
        guard try await context.app.store.listSessions(container: container, userName: user.name).contains(where: { $0.id == id })
        else { throw DashboardError(status: .notFound, title: "No such session", message: "No session \(id) of this user.") }
        let revoked = try await context.app.store.revokeSession(id: id)
        return try await show(context, message: revoked ? "Session revoked." : "The session was already revoked.")
    }

    /// `POST /dashboard/user/discoverable`: opts the user in to discovery or out, as
    /// `nimbus user discoverable` does.
    static func setDiscoverable(_ context: PageContext) async throws -> Response {
        let (container, _, user) = try await requestedUser(context)
        let on = context.form["discoverable"] == "on"
        _ = try await context.app.store.setDiscoverable(on, userName: user.name, container: container)
        return try await show(context, message: on ? "\(user.name) is discoverable." : "\(user.name) is no longer discoverable.")
    }

    /// The security roles each environment's schema declares, and whether the user holds them.
    static func roleValues(_ context: PageContext, container: String, recordName: String) async throws -> [[String: Any]] {
        var environments: [[String: Any]] = []
        for environment in ContainerEnvironment.allCases {
            let schema = try await context.app.store.schema(container: container, environment: environment).schema
            let held = Set(RoleAssignments.roles(of: recordName, in: schema))
            environments.append([
                "environment": environment.rawValue, "none": schema.roles.isEmpty,
                "roles": schema.roles.sorted().map { role in
                    ["role": role, "held": held.contains(role), "id": "role-\(environment.rawValue)-\(role)"] as [String: Any]
                },
            ])
        }
        return environments
    }

    /// `POST /dashboard/user/role`: grants a security role to the user in one environment, or
    /// revokes it (`grant` = `on` / `off`), as `nimbus role grant|revoke` does; audited.
    static func setRole(_ context: PageContext) async throws -> Response {
        let (container, recordName, user) = try await requestedUser(context)
        let role = try context.required("role", what: "role")
        guard let environment = ContainerEnvironment(rawValue: context.form["env"] ?? "") else {
            throw DashboardError(status: .badRequest, title: "No environment", message: "env must be development or production.")
        }
        let grant = context.form["grant"] == "on"
        do {
            let changed = try await RoleAssignments.set(
                grant, role: role, userRecordName: recordName, container: container, environment: environment,
                in: context.app.store)
            if changed {
                try await context.app.store.appendAudit(
                    OperatorAuditEntry(
                        at: context.app.now(), operatorName: context.session.operatorName,
                        action: grant ? "grant role" : "revoke role", container: container,
                        detail: "\(role) (\(environment.rawValue)) to user \(user.name) (\(recordName))"))
            }
            let state = grant ? (changed ? "now holds" : "already held") : (changed ? "no longer holds" : "did not hold")
            return try await show(context, message: "\(user.name) \(state) role \(role) in \(environment.rawValue).")
        } catch let error as CloudKitError {
            return try await show(context, message: "Not changed: \(error.reason)")
        }
    }

    /// `POST /dashboard/user/delete`: `accounts/delete` as the user, after the operator typed
    /// the user's name.
    static func delete(_ context: PageContext) async throws -> Response {
        let (container, recordName, user) = try await requestedUser(context)
        guard context.form["confirm"] == user.name else {
            return try await show(context, message: "Not deleted: type the user's name (\(user.name)) to confirm.")
        }
        _ = try await context.app.server.gateway.perform(
            .accountsDelete, container: container, environment: .development, scope: .private, user: user,
            body: ["confirm": "DELETE"], operatorName: context.session.operatorName, request: context.request)
        try await context.app.store.appendAudit(
            OperatorAuditEntry(
                at: context.app.now(), operatorName: context.session.operatorName, action: "delete account",
                container: container, detail: "user \(user.name) (\(recordName))"))
        return DashboardApp.redirect(to: "/dashboard/users?" + DashboardApp.query([("c", container)]))
    }
}
