import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The operator sign-in form, signing in and out.
enum SignInPages {
    /// `GET /dashboard/signin?next=…`: the form, with a fresh pre-session CSRF cookie.
    static func form(_ app: DashboardApp, _ request: Request) async -> Response {
        if await OperatorAuth.session(of: request, app: app) != nil {
            return DashboardApp.redirect(to: next(request.uri.queryParameters.get("next").map { String($0) }))
        }
        return formPage(app, request, name: "", message: nil, status: .ok)
    }

    static func formPage(
        _ app: DashboardApp, _ request: Request, name: String, message: String?, status: HTTPResponse.Status
    ) -> Response {
        let csrf = RandomToken.hex(bytes: 32)
        var headers = HTTPFields()
        headers.append(
            HTTPField(name: .setCookie, value: OperatorAuth.cookie(OperatorAuth.signInCookie, csrf, maxAge: 3600, secure: secure(app, request))))
        let nextPath = next(request.uri.queryParameters.get("next").map { String($0) })
        return app.render(
            "signin",
            ["title": "Sign in", "signinCSRF": csrf, "name": name, "message": message as Any, "next": nextPath],
            session: nil, status: status, headers: headers)
    }

    /// `POST /dashboard/signin`: checks the throttle, the password (bcrypt) and opens a session.
    static func signIn(_ app: DashboardApp, _ request: Request) async -> Response {
        var request = request
        guard let form = try? await FormFields.read(&request) else {
            return formPage(app, request, name: "", message: "The form could not be read.", status: .badRequest)
        }
        let name = form["name"] ?? ""
        guard let sent = form["csrf"], let cookie = request.cookies[OperatorAuth.signInCookie]?.value,
            OperatorAuth.same(sent, cookie)
        else {
            return formPage(app, request, name: name, message: "The form expired; sign in again.", status: .forbidden)
        }
        let address = app.server.peerAddress
        do {
            try await app.throttle.check(account: "operator " + name, address: address)
            let account = try await app.store.operatorAccount(named: name)
            guard try await app.server.passwords.verify(form["password"] ?? "", hash: account?.passwordHash), let account
            else {
                await app.throttle.recordFailure(account: "operator " + name, address: address)
                return formPage(app, request, name: name, message: "Wrong name or password.", status: .unauthorized)
            }
            let cookie = try await OperatorAuth.open(operatorName: account.name, app: app, secure: secure(app, request))
            var headers = HTTPFields()
            headers.append(HTTPField(name: .setCookie, value: cookie))
            headers.append(
                HTTPField(name: .setCookie, value: OperatorAuth.cookie(OperatorAuth.signInCookie, "", maxAge: 0, secure: secure(app, request))))
            return DashboardApp.redirect(to: next(form["next"]), headers: headers)
        } catch let error as CloudKitError {
            return formPage(app, request, name: name, message: error.reason, status: .tooManyRequests)
        } catch {
            app.server.logger.error("operator sign-in failed: \(error)")
            return formPage(app, request, name: name, message: "The server failed; try again.", status: .internalServerError)
        }
    }

    /// `POST /dashboard/signout`: closes the session and clears the cookie.
    static func signOut(_ context: PageContext) async throws -> Response {
        try await context.app.store.closeOperatorSession(tokenHash: context.session.tokenHash, now: context.app.now())
        var headers = HTTPFields()
        headers.append(
            HTTPField(name: .setCookie, value: OperatorAuth.cookie(OperatorAuth.sessionCookie, "", maxAge: 0, secure: secure(context.app, context.request))))
        return DashboardApp.redirect(to: "/dashboard/signin", headers: headers)
    }

    /// Where to go after signing in: a dashboard path, never another site.
    static func next(_ raw: String?) -> String {
        guard let raw, raw.hasPrefix("/dashboard"), !raw.hasPrefix("//"), !raw.contains("\\"),
            !raw.unicodeScalars.contains(where: { $0.value < 0x20 })
        else { return "/dashboard" }
        return raw
    }

    /// Whether the operator's browser reached the server over HTTPS (the cookies' `Secure`):
    /// the public URL's scheme, a trusted proxy's word, or the request's own; never the
    /// `X-Forwarded-Proto` of a peer the operator does not trust.
    static func secure(_ app: DashboardApp, _ request: Request) -> Bool {
        OriginPolicy(app.server.configuration.origin).isSecure(RequestArrival(request))
    }
}
