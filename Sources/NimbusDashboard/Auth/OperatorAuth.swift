import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// Operator sessions: a random token in an `HttpOnly`, `SameSite=Strict` cookie, stored as
/// its SHA-256, with a CSRF token every form of the session must carry.
enum OperatorAuth {
    static let sessionCookie = "nimbus_operator"
    /// The sign-in form's CSRF token before there is a session (double submit).
    static let signInCookie = "nimbus_operator_signin"

    /// The live session of the request's cookie, if any.
    static func session(of request: Request, app: DashboardApp) async -> OperatorSession? {
        guard let token = request.cookies[sessionCookie]?.value, token.count == 64,
            token.allSatisfy({ $0.isHexDigit })
        else { return nil }
        return try? await app.store.operatorSession(tokenHash: SessionToken.hash(token), now: app.now())
    }

    /// Opens a session for `operatorName` and returns its cookie.
    static func open(operatorName: String, app: DashboardApp, secure: Bool) async throws -> String {
        let token = SessionToken.generate()
        let now = app.now()
        let lifetime = app.sessionLifetime.components.seconds
        try await app.store.openOperatorSession(
            OperatorSession(
                tokenHash: SessionToken.hash(token), operatorName: operatorName, csrfToken: RandomToken.hex(bytes: 32),
                createdAt: now, expiresAt: now + lifetime * 1000))
        return cookie(sessionCookie, token, maxAge: lifetime, secure: secure)
    }

    static func cookie(_ name: String, _ value: String, maxAge: Int64, secure: Bool) -> String {
        "\(name)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// Equal strings, compared in time that does not depend on where they differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count, !x.isEmpty else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
