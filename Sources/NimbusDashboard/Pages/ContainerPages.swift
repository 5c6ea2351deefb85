import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// Containers: the list, creating one, and a container's page (API tokens, server-to-server
/// keys, sign-in settings, operator access), through the store calls `nimbus container`,
/// `nimbus token` and `nimbus key` make.
enum ContainerPages {
    /// `GET /dashboard`.
    static func list(_ context: PageContext, message: String? = nil, token: String? = nil) async throws -> Response {
        let containers = try await context.app.store.listContainers()
        return context.render(
            "containers",
            [
                "title": "Containers", "containers": containers.map { ["id": $0, "q": DashboardApp.query([("c", $0)])] },
                "none": containers.isEmpty, "message": message as Any, "token": token as Any,
            ])
    }

    /// `POST /dashboard/containers`: creates a container and shows its first API token.
    static func create(_ context: PageContext) async throws -> Response {
        let identifier = (context.form["identifier"] ?? "").trimmingCharacters(in: .whitespaces)
        let token = try await context.app.store.createContainer(identifier)
        return try await show(context, container: identifier, message: "Container \(identifier) created.", secret: token.token)
    }

    /// `GET /dashboard/container?c=…`.
    static func show(_ context: PageContext) async throws -> Response {
        try await show(context, container: try await context.container())
    }

    static func show(
        _ context: PageContext, container: String, message: String? = nil, secret: String? = nil,
        privateKey: String? = nil
    ) async throws -> Response {
        let store = context.app.store
        let tokens = try await store.listTokens(container: container).filter { $0.kind == .api }
        let keys = try await store.listServerKeys(container: container)
        let signIn = try await store.signInSettings(container: container)
        let issuers = try await store.identityIssuers(container: container)
        let privateAccess = try await store.operatorsMayReadPrivateData(container: container)
        let q = DashboardApp.query([("c", container)])
        return context.render(
            "container",
            [
                "title": container, "container": container, "q": q,
                "message": message as Any, "secret": secret as Any, "privateKey": privateKey as Any,
                "tokens": tokens.map { token in
                    ["token": token.token, "created": Format.date(token.createdAt), "revoked": token.revoked] as [String: Any]
                },
                "keys": keys.map { key in
                    ["keyID": key.keyID, "created": Format.date(key.createdAt), "revoked": key.revoked] as [String: Any]
                },
                "passwords": signIn.passwords, "redirectOrigins": signIn.redirectOrigins.joined(separator: ", "),
                "deletePublicRecords": signIn.deletePublicRecords,
                "issuers": issuers.map { ["issuer": $0.issuer, "audiences": $0.audiences.joined(separator: ", ")] },
                "privateAccess": privateAccess,
                "environments": ContainerEnvironment.allCases.map { environment in
                    ["name": environment.rawValue, "q": DashboardApp.query([("c", container), ("env", environment.rawValue)])]
                },
            ])
    }

    /// `POST /dashboard/container/token`: another API token.
    static func createToken(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let token = try await context.app.store.createAPIToken(container: container)
        return try await show(context, container: container, message: "API token created.", secret: token.token)
    }

    /// `POST /dashboard/container/token/revoke`.
    static func revokeToken(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let token = try context.required("token", what: "token")
        guard try await context.app.store.listTokens(container: container).contains(where: { $0.token == token && $0.kind == .api })
        else { throw DashboardError(status: .notFound, title: "No such token", message: "\(container) has no API token \(token).") }
        let revoked = try await context.app.store.revokeToken(token)
        return try await show(context, container: container, message: revoked ? "Token revoked." : "The token was already revoked.")
    }

    /// `POST /dashboard/container/key`: a new P-256 key pair, the private key shown once.
    static func createKey(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let privateKey = P256.Signing.PrivateKey()
        let keyID = SHA256.hash(data: privateKey.publicKey.derRepresentation).map { String(format: "%02x", $0) }.joined()
        try await context.app.store.addServerKey(
            keyID: keyID, container: container, publicKeyPEM: privateKey.publicKey.pemRepresentation)
        return try await show(
            context, container: container, message: "Server-to-server key \(keyID) created.",
            privateKey: privateKey.pemRepresentation)
    }

    /// `POST /dashboard/container/key/revoke`.
    static func revokeKey(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let keyID = try context.required("key", what: "key ID")
        guard try await context.app.store.listServerKeys(container: container).contains(where: { $0.keyID == keyID }) else {
            throw DashboardError(status: .notFound, title: "No such key", message: "\(container) has no key \(keyID).")
        }
        let revoked = try await context.app.store.revokeServerKey(keyID: keyID)
        return try await show(context, container: container, message: revoked ? "Key revoked." : "The key was already revoked.")
    }

    /// `POST /dashboard/container/private-access`: lets operators read users' private
    /// databases of the container, or stops it.
    static func setPrivateAccess(_ context: PageContext) async throws -> Response {
        let container = try await context.container()
        let allowed = context.form["allowed"] == "on"
        try await context.app.store.setOperatorsMayReadPrivateData(allowed, container: container)
        try await context.app.store.appendAudit(
            OperatorAuditEntry(
                at: context.app.now(), operatorName: context.session.operatorName,
                action: allowed ? "allow private data" : "forbid private data", container: container, detail: ""))
        return try await show(
            context, container: container,
            message: allowed ? "Operators may now read users' private databases." : "Operators may no longer read users' private databases.")
    }
}
