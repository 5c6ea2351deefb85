import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NimbusProtocol
import NimbusStore

/// The sign-in page a container's `redirectURL` points to: plain HTML forms (no script) to
/// sign in, sign up and verify an address with a built-in account. A successful sign-in hands
/// the token back in one of CloudKit's two ways:
/// - opened with `?redirect=URL` (a URL on an allowed origin): `303 See Other` to it with the
///   token added as the query parameter `ckWebAuthToken` (CloudKit's "URL redirect");
/// - opened as `redirectURL` is, without `redirect` (CloudKit JS's sign-in window): a page
///   whose one script posts `{ckSession: token}` to the window that opened it, addressed to
///   each of the container's allowed origins so that no other origin receives it, then closes
///   (``popUpHandBack(token:origins:fallback:)``).
///
/// Every form POST carries a CSRF token that must match the `nimbus_csrf` cookie set with the
/// form (`SameSite=Strict`, `HttpOnly`).
///
/// - `GET|POST /signin/{container}/{environment}?redirect=URL`
/// - `GET|POST /signin/{container}/{environment}/signup?redirect=URL`
/// - `GET|POST /signin/{container}/{environment}/verify?email=…&code=…&redirect=URL`
struct SignInPage: Sendable {
    let accounts: AccountService
    /// The origins of mailed links and whether the page is served over HTTPS.
    let origins: OriginPolicy

    static let csrfCookie = "nimbus_csrf"
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let frameOptions = HTTPField.Name("X-Frame-Options")!
    static let formLimit = 16 << 10

    /// The page's path for a container environment (what `redirectURL` carries after the origin).
    static func path(container: String, environment: ContainerEnvironment) -> String {
        "/signin/\(container)/\(environment.rawValue)"
    }

    /// The container of a ``path(container:environment:)``.
    static func container(ofPath path: String) -> String? {
        let parts = path.split(separator: "/")
        guard parts.count == 3, parts[0] == "signin" else { return nil }
        return String(parts[1])
    }

    static func add(to router: Router<BasicRequestContext>, page: SignInPage) {
        for suffix in ["", "/signup", "/verify"] {
            let path = RouterPath("/signin/{container}/{environment}" + suffix)
            router.get(path) { request, context in await page.respond(request, context, form: suffix) }
            router.post(path) { request, context in await page.respond(request, context, form: suffix) }
        }
    }

    /// What the forms post (every field optional: a missing one is the user's mistake, answered on the page).
    struct Form: Decodable {
        var csrf: String?
        var email: String?
        var password: String?
        var code: String?
        var redirect: String?
    }

    func respond(_ request: Request, _ context: BasicRequestContext, form kind: String) async -> Response {
        guard let container = context.parameters.get("container"),
            let environment = context.parameters.get("environment").flatMap({ ContainerEnvironment(rawValue: $0) })
        else { return Self.page(status: .notFound, title: "Not found", body: "<p>No such sign-in page.</p>") }
        var request = request
        let query = request.uri.queryParameters
        var form = Form(
            email: query.get("email").map { String($0) }, code: query.get("code").map { String($0) },
            redirect: query.get("redirect").map { String($0) })
        let settings: ContainerSignInSettings
        do {
            settings = try await accounts.requirePasswords(container: container)
        } catch {
            return Self.page(status: .notFound, title: "Sign-in unavailable", body: "<p>\(FormText.html(Self.reason(error)))</p>")
        }
        // The page links relative to itself; mailed links start at the mail origin.
        let links = SignInLinks(origin: "", container: container, environment: environment)
        let mailLinks = SignInLinks(origin: origins.mailOrigin(request), container: container, environment: environment)
        let secure = origins.isSecure(RequestArrival(request))
        if case .failure(let refusal) = RedirectTarget.resolve(form.redirect, allowed: settings.redirectOrigins) {
            return Self.page(status: .badRequest, title: "Cannot return to the app", body: "<p>\(FormText.html(refusal.message))</p>")
        }
        guard request.method == .post else {
            return Self.formPage(kind, form: form, links: links, message: nil, secure: secure)
        }
        do {
            let buffer = try await request.collectBody(upTo: Self.formLimit)
            form = try URLEncodedFormDecoder().decode(Form.self, from: String(buffer: buffer))
        } catch {
            return Self.page(status: .badRequest, title: "Bad form", body: "<p>The form could not be read; reload the page.</p>")
        }
        guard let sent = form.csrf, let cookie = request.cookies[Self.csrfCookie]?.value, Self.same(sent, cookie) else {
            return Self.page(
                status: .forbidden, title: "Form expired",
                body: "<p>This form did not come from this page, or it expired. Reload the page and try again.</p>")
        }
        let target: String
        switch RedirectTarget.resolve(form.redirect, allowed: settings.redirectOrigins) {
        case .success(let url): target = url
        case .failure(let refusal):
            return Self.page(status: .badRequest, title: "Cannot return to the app", body: "<p>\(FormText.html(refusal.message))</p>")
        }
        do {
            switch kind {
            case "/signup":
                try await accounts.signUp(
                    email: form.email ?? "", password: form.password ?? "", container: container, links: mailLinks)
                form.password = nil
                return Self.formPage(
                    "/verify", form: form, links: links,
                    message: "If this address can be used, a verification code is on its way to it.", secure: secure)
            case "/verify":
                try await accounts.verify(email: form.email ?? "", code: form.code ?? "", container: container)
                return Self.formPage("", form: form, links: links, message: "Your address is verified: sign in.", secure: secure)
            default:
                let issued = try await accounts.signIn(
                    email: form.email ?? "", password: form.password ?? "", container: container,
                    device: Self.device(request), address: PeerAddress.current)
                if form.redirect?.isEmpty ?? true {
                    // Opened as `redirectURL` is: CloudKit JS's sign-in window.
                    return Self.popUpHandBack(
                        token: issued.token, origins: settings.redirectOrigins,
                        fallback: RedirectTarget.handingBack(token: issued.token, to: target))
                }
                var headers = HTTPFields()
                headers[.location] = RedirectTarget.handingBack(token: issued.token, to: target)
                headers[.cacheControl] = "no-store"
                headers[Self.referrerPolicy] = "no-referrer"
                return Response(status: .seeOther, headers: headers)
            }
        } catch {
            form.password = nil
            // Throttled (429) and mail that could not be sent (503) say when to try again.
            let failure = error as? CloudKitError
            let status: HTTPResponse.Status =
                switch failure?.code {
                case .throttled: .tooManyRequests
                case .tryAgainLater: .serviceUnavailable
                default: .badRequest
                }
            var response = Self.formPage(
                kind, form: form, links: links, message: Self.reason(error), secure: secure, status: status)
            if status != .badRequest {
                response.headers[HTTPField.Name.retryAfter] = String(failure?.retryAfter ?? 1)
            }
            return response
        }
    }

    /// The browser as a session device: its User-Agent, cut to 100 bytes, on platform `web`.
    static func device(_ request: Request) -> SessionDevice {
        var name = ""
        for character in (request.headers[.userAgent] ?? "web browser") {
            guard !character.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { continue }
            guard name.utf8.count + String(character).utf8.count <= 100 else { break }
            name.append(character)
        }
        return SessionDevice(name: name.isEmpty ? "web browser" : name, platform: "web")
    }

    /// Equal strings, compared in time that does not depend on where they differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count, !x.isEmpty else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    static func reason(_ error: any Error) -> String {
        (error as? CloudKitError)?.reason ?? "The server failed; try again."
    }
}
