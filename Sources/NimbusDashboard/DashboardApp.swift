import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The dashboard's shared parts: the server's, the templates, and operator sign-in.
struct DashboardApp: Sendable {
    let server: ServerParts
    let templates: Templates
    let sessionLifetime: Duration
    /// Failed operator sign-ins, throttled as end users' are, in buckets of their own.
    let throttle: SignInThrottle

    init(server: ServerParts, sessionLifetime: Duration) {
        self.server = server
        self.templates = Templates.standard
        self.sessionLifetime = sessionLifetime
        self.throttle = SignInThrottle(settings: server.configuration.signIn, clock: server.configuration.clock)
    }

    var store: any NimbusStorage { server.store }
    func now() -> Int64 { server.configuration.clock.nowMillis() }

    /// A page for a signed-in operator (a GET): without a session, the sign-in page with a
    /// way back here.
    func page(_ request: Request, _ body: (PageContext) async throws -> Response) async -> Response {
        guard let session = await OperatorAuth.session(of: request, app: self) else {
            let back = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
            return Self.redirect(to: "/dashboard/signin?next=" + Self.queryEncoded(back))
        }
        let context = PageContext(app: self, request: request, session: session, form: FormFields([:]))
        return await respond(context, body)
    }

    /// A change (a POST form): needs a session and the session's CSRF token in the form.
    func action(_ request: Request, _ body: (PageContext) async throws -> Response) async -> Response {
        guard let session = await OperatorAuth.session(of: request, app: self) else {
            return Self.redirect(to: "/dashboard/signin")
        }
        var request = request
        let form: FormFields
        do {
            form = try await FormFields.read(&request)
        } catch {
            return errorPage(session: session, status: .badRequest, title: "Bad form", message: "The form could not be read (\(error)).")
        }
        guard let sent = form["csrf"], OperatorAuth.same(sent, session.csrfToken) else {
            return errorPage(
                session: session, status: .forbidden, title: "Form refused",
                message: "This form did not come from this dashboard or your session changed. Reload the page and try again.")
        }
        return await respond(PageContext(app: self, request: request, session: session, form: form), body)
    }

    private func respond(_ context: PageContext, _ body: (PageContext) async throws -> Response) async -> Response {
        do {
            return try await body(context)
        } catch let error as DashboardError {
            return errorPage(session: context.session, status: error.status, title: error.title, message: error.message)
        } catch let error as CloudKitError {
            return errorPage(
                session: context.session, status: HTTPResponse.Status(code: error.code.httpStatus),
                title: error.code.rawValue, message: error.reason)
        } catch let error as AccountError {
            return errorPage(session: context.session, status: .badRequest, title: "Refused", message: error.message)
        } catch {
            server.logger.error("dashboard page failed: \(error)", metadata: ["path": "\(context.request.uri.path)"])
            return errorPage(
                session: context.session, status: .internalServerError, title: "Server error",
                message: "The server failed to show this page; try again.")
        }
    }

    func errorPage(session: OperatorSession?, status: HTTPResponse.Status, title: String, message: String) -> Response {
        render(
            "error", ["title": title, "message": message], session: session, status: status)
    }

    /// Renders a page template inside the layout.
    func render(
        _ template: String, _ values: [String: Any], session: OperatorSession?, status: HTTPResponse.Status = .ok,
        headers extra: HTTPFields = [:]
    ) -> Response {
        var values = values
        if let session {
            values["operator"] = session.operatorName
            values["csrf"] = session.csrfToken
        }
        values["node"] = LiveNode.name(port: nil)
        let html = templates.render(template, Self.unwrapped(values))
        var headers = Self.htmlHeaders
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// `values` without its `nil`s and with optionals unwrapped: Mustache would write an
    /// optional as `nil` or `Optional(…)` and count a `nil` as a truthy section.
    static func unwrapped(_ values: [String: Any]) -> [String: Any] {
        values.compactMapValues { value in
            let mirror = Mirror(reflecting: value)
            guard mirror.displayStyle == .optional else { return value }
            return mirror.children.first?.value
        }
    }

    static let htmlHeaders: HTTPFields = {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        headers[HTTPField.Name("Content-Security-Policy")!] =
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            + "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
        return headers
    }()

    static func redirect(to location: String, headers extra: HTTPFields = [:]) -> Response {
        var headers = extra
        headers[.location] = location
        headers[.cacheControl] = "no-store"
        return Response(status: .seeOther, headers: headers)
    }

    /// `text` percent-encoded for a query value.
    static func queryEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// A query string from pairs, each value encoded.
    static func query(_ pairs: [(String, String)]) -> String {
        pairs.map { "\($0.0)=\(queryEncoded($0.1))" }.joined(separator: "&")
    }
}

/// One request to a dashboard page: who asks, and what they sent.
struct PageContext: Sendable {
    let app: DashboardApp
    let request: Request
    let session: OperatorSession
    /// The POSTed form (empty for pages).
    let form: FormFields

    /// A query parameter, or for a POST a form field.
    func argument(_ name: String) -> String? {
        if let value = form[name] { return value }
        return request.uri.queryParameters.get(name).map { String($0) }
    }

    /// A required argument.
    func required(_ name: String, what: String) throws -> String {
        guard let value = argument(name), !value.isEmpty else {
            throw DashboardError(status: .badRequest, title: "Missing \(what)", message: "This page needs a \(what) (`\(name)`).")
        }
        return value
    }

    /// The container argument `c`, which must exist.
    func container() async throws -> String {
        let container = try required("c", what: "container")
        guard try await app.store.listContainers().contains(container) else {
            throw DashboardError(status: .notFound, title: "No such container", message: "There is no container \(container).")
        }
        return container
    }

    /// The environment argument `env` (development by default).
    func environment() throws -> ContainerEnvironment {
        let raw = argument("env") ?? "development"
        guard let environment = ContainerEnvironment(rawValue: raw) else {
            throw DashboardError(
                status: .badRequest, title: "No such environment", message: "The environment is development or production, not \(raw).")
        }
        return environment
    }

    func render(_ template: String, _ values: [String: Any], status: HTTPResponse.Status = .ok) -> Response {
        app.render(template, values, session: session, status: status)
    }

    /// Calls the CloudKit API as this operator: in the public database, or with the argument
    /// `u` (a user record name) in that user's private database, as that user — only where
    /// the container lets operators, and written to the audit log.
    func perform(
        _ operation: APIOperation, container: String, environment: ContainerEnvironment, body: JSON
    ) async throws -> JSON {
        guard let recordName = userArgument else {
            return try await app.server.gateway.perform(
                operation, container: container, environment: environment, body: body,
                operatorName: session.operatorName, request: request)
        }
        let user = try await privateUser(container: container, recordName: recordName)
        try await app.store.appendAudit(
            OperatorAuditEntry(
                at: app.now(), operatorName: session.operatorName, action: "private data: \(operation.rawValue)",
                container: container, detail: "user \(user.name) (\(recordName)), \(environment.rawValue)"))
        return try await app.server.gateway.perform(
            operation, container: container, environment: environment, scope: .private, user: user, body: body,
            operatorName: session.operatorName, request: request)
    }

    /// The argument `u`: the user whose private database a page shows.
    var userArgument: String? { argument("u").flatMap { $0.isEmpty ? nil : $0 } }

    /// `[("u", …)]` for links that stay in a user's private database, else nothing.
    var userPairs: [(String, String)] { userArgument.map { [("u", $0)] } ?? [] }

    /// A user of the container whose private data operators may read.
    func privateUser(container: String, recordName: String) async throws -> UserIdentity {
        guard try await app.store.operatorsMayReadPrivateData(container: container) else {
            throw DashboardError(
                status: .forbidden, title: "Private data is closed",
                message: "\(container) does not let operators read users' private databases; turn it on on the container's page.")
        }
        guard let user = try await app.store.user(recordName: recordName, container: container) else {
            throw DashboardError(status: .notFound, title: "No such user", message: "\(container) has no user \(recordName).")
        }
        return user
    }
}

/// A page's refusal, shown as an error page.
struct DashboardError: Error {
    var status: HTTPResponse.Status
    var title: String
    var message: String
}

extension PageContext {
    /// `scheme://host[:port]` the operator reached the server at.
    var origin: String { OriginPolicy(app.server.configuration.origin).responseOrigin(request) }

    /// The dashboard query of a record page in `container`'s `environment` (in the private
    /// database of the user `u`, if any).
    static func recordQuery(
        container: String, environment: ContainerEnvironment, zone: String, record: String, user: [(String, String)] = []
    ) -> String {
        DashboardApp.query([("c", container), ("env", environment.rawValue), ("zone", zone), ("record", record)] + user)
    }
}
