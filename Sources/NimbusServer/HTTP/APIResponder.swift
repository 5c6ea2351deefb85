import Foundation
import HTTPTypes
import Hummingbird
import Instrumentation
import Tracing
import Logging
import NIOCore
import NimbusProtocol
import NimbusStore

/// Turns HTTP requests on `/database/1/{container}/{environment}/{database}/{operation}` (and
/// `/device/1/{container}/{environment}/tokens/…`, where CloudKit JS registers for pushes) into
/// API calls: authenticates from the URL and headers, reads the body (bounded by the
/// operation's limit, ``APIOperation/maxBodyBytes``), checks a signature over it, parses the
/// JSON, dispatches to the handler for the operation and renders its result or its error in
/// CloudKit's shape.
struct APIResponder: Sendable {
    let api: CloudKitAPI
    let authenticator: Authenticator
    /// The ceiling of every operation's body limit (``ServerConfiguration/maxBodyBytes``).
    let maxBodyBytes: Int
    /// The origins of the URLs the server writes (``ServerConfiguration/origin``).
    var origins = OriginPolicy(OriginSettings())
    /// Signs asset URLs (`nil`: no assets).
    var assetLinks: AssetLinks? = nil
    /// How long a `downloadURL` stays valid, in milliseconds.
    var assetDownloadLifetime: Int64 = 0
    /// Where failed requests are counted by error code (`nil`: nowhere); it feeds `/metrics` too.
    var statistics: RequestStatistics? = nil
    /// Traces requests that carry a sampled `traceparent` (`nil`: none).
    var tracer: NimbusTracer? = nil
    /// Where unexpected (non-CloudKit) errors are counted (`nil`: metrics off).
    var metrics: ServerMetrics? = nil
    /// Rate limits and in-flight caps (`nil`: none).
    var throttle: RequestThrottle? = nil

    static let deviceHeader = HTTPField.Name("X-Nimbus-Device-ID")!
    static let keyIDHeader = HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!
    static let dateHeader = HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!
    static let signatureHeader = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!

    func respond(to request: Request, context: some RequestContext) async -> Response {
        guard let tracer else { return await respondUntraced(to: request, context: context) }
        var trace = ServiceContext.topLevel
        let headers = TraceHeaders(request.headers, deviceHeader: Self.deviceHeader)
        tracer.extract(headers, into: &trace, using: TraceHeadersExtractor())
        guard tracer.isSampled(trace) else { return await respondUntraced(to: request, context: context) }
        // Named for its operation once ``handle(_:context:)`` has parsed the path.
        let span = tracer.startSpan("request", context: trace, ofKind: .server)
        let response = await ServiceContext.withValue(span.context) {
            await respondUntraced(to: request, context: context)
        }
        let device = headers.deviceID
        span.update { facts in
            facts["http.status"] = String(response.status.code)
            if let device { facts["device"] = device }
        }
        span.end()
        return response
    }

    private func respondUntraced(to request: Request, context: some RequestContext) async -> Response {
        do {
            return try await handle(request, context: context)
        } catch let error as CloudKitError {
            statistics?.recordError(code: error.code.rawValue)
            ServiceContext.currentSpan?.fail(code: error.code.rawValue, message: error.reason)
            return Self.errorResponse(error)
        } catch {
            statistics?.recordError(code: ServerErrorCode.internalError.rawValue)
            ServiceContext.currentSpan?.fail(code: ServerErrorCode.internalError.rawValue, message: "the server failed")
            metrics?.countStoreError(at: .api)
            // The request's logger: the line carries its `request_id`. The path, never the
            // query (which holds the tokens).
            context.logger.error("request failed: \(error)", metadata: ["path": "\(request.uri.path)"])
            return Self.errorResponse(CloudKitError(.internalError, "the server failed to handle the request; try again"))
        }
    }

    private func handle(_ request: Request, context: some RequestContext) async throws -> Response {
        let path = request.uri.path
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        // database / 1 / container / environment / scope / op...
        // (or database / 1 / container / environment / op... for the operations of no database,
        // or device / 1 / container / environment / tokens / … for a device's push token)
        guard parts.count >= 6, parts[0] == "database" || parts[0] == "device" else {
            throw CloudKitError(.notFound, "no such endpoint: \(path)")
        }
        guard parts[1] == "1" else {
            throw CloudKitError(.badRequest, "protocol version \(parts[1]) is not supported; use /database/1/")
        }
        let container = parts[2]
        guard let environment = ContainerEnvironment(rawValue: parts[3]) else {
            throw CloudKitError(.badRequest, "environment must be development or production, got '\(parts[3])'")
        }
        let scope: DatabaseScope
        let operationPath: String
        if parts[0] == "device" {
            guard let operation = APIOperation(rawValue: parts[4...].joined(separator: "/")), operation.isDeviceOperation else {
                throw CloudKitError(.notFound, "no such endpoint: \(path); /device/1/ serves tokens/create and tokens/register")
            }
            scope = .private
            operationPath = operation.rawValue
        } else if let operation = APIOperation(rawValue: parts[4...].joined(separator: "/")), operation.isDatabaseless {
            // Tokens belong to the signed-in user of the container environment, not to a
            // database; signing in needs only the API token.
            scope = operation.isAccountEntry ? .public : .private
            operationPath = operation.rawValue
        } else {
            guard parts.count >= 7 else { throw CloudKitError(.notFound, "no such endpoint: \(path)") }
            guard let pathScope = DatabaseScope(rawValue: parts[4]) else {
                throw CloudKitError(.badRequest, "database must be public, private or shared, got '\(parts[4])'")
            }
            operationPath = parts[5...].joined(separator: "/")
            scope = APIOperation(rawValue: operationPath)?.isAccountEntry == true ? .public : pathScope
        }
        // Which data a traced request touched: the dashboard hides record names of private
        // databases from operators who may not read them.
        let span = ServiceContext.currentSpan
        span?.update {
            $0["container"] = container
            $0["database"] = scope.rawValue
        }
        guard let operation = APIOperation(rawValue: operationPath) else {
            throw CloudKitError(.notFound, "no such operation: \(operationPath)")
        }
        span?.operationName = operation.rawValue
        guard operation.methods.contains(request.method.rawValue) else {
            throw CloudKitError(
                .badRequest, "\(operationPath) takes \(operation.methods.joined(separator: " or ")), not \(request.method.rawValue)")
        }
        // Refused before anything is read or looked up: a body announced larger than the operation takes.
        let limit = min(operation.maxBodyBytes, maxBodyBytes)
        if let announced = request.headers[.contentLength].flatMap({ Int($0) }), announced > limit {
            throw Self.bodyTooLarge(operation, limit: limit, announced: announced)
        }
        // Authenticated from the URL and headers before the body is read: an unauthenticated
        // client never gets the server to hold its upload.
        let query = request.uri.queryParameters
        let credentials = Authenticator.Credentials(
            apiToken: query.get("ckAPIToken").map { String($0) },
            webAuthToken: query.get("ckWebAuthToken").map { String($0) },
            keyID: request.headers[Self.keyIDHeader],
            signatureDate: request.headers[Self.dateHeader],
            signature: request.headers[Self.signatureHeader],
            deviceID: request.headers[Self.deviceHeader] ?? query.get("deviceID").map { String($0) })
        // Throttled by address before authentication (cheap), by user and token right after.
        try await throttle?.checkAddress(PeerAddress.current, container: container, environment: environment)
        let pending: Authenticator.Pending
        do {
            pending = try await authenticator.authenticateHead(
                credentials, container: container, environment: environment, scope: scope, subpath: path,
                query: request.uri.query)
        } catch var error as CloudKitError {
            error.redirectURL = await signInURL(error, request: request)
            throw error
        }
        let permit = try await throttle?.admit(
            container: container, environment: environment, user: pending.identity.user?.recordName,
            token: credentials.apiToken ?? pending.identity.serverKeyID, address: PeerAddress.current)
        defer { permit?.release() }
        // A user flooding the server beside others: its request runs at the lowest CPU priority.
        if let lane = permit?.lane {
            metrics?.countBackgroundRequest()
            return try await lane.run {
                try await handleAdmitted(
                    request, context: context, operation: operation, bodyLimit: limit, pending: pending,
                    container: container, environment: environment, transactionRecordLimit: permit?.transactionRecordLimit)
            }
        }
        return try await handleAdmitted(
            request, context: context, operation: operation, bodyLimit: limit, pending: pending, container: container,
            environment: environment)
    }

    /// The rest of a request once the throttle let it run: reads, verifies and parses the body,
    /// runs the operation and renders its result.
    private func handleAdmitted(
        _ request: Request, context: some RequestContext, operation: APIOperation, bodyLimit limit: Int,
        pending: Authenticator.Pending, container: String, environment: ContainerEnvironment,
        transactionRecordLimit: Int? = nil
    ) async throws -> Response {
        let bodyBytes = try await Self.collectBody(request, limit: limit, operation: operation)
        let identity = try pending.verified(body: bodyBytes)

        let json: JSON
        if bodyBytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            json = .object([:])
        } else {
            do { json = try JSON.parse(bodyBytes) } catch { throw CloudKitError.badRequest("\(error)") }
        }
        let body = WireReader(json)
        _ = try body.object()
        let call = APICall(
            operation: operation, method: request.method.rawValue, identity: identity, body: body,
            numbersAsStrings: try body.optionalBool("numbersAsStrings") ?? false,
            origin: origins.responseOrigin(request), mailOrigin: origins.mailOrigin(request), assetLinks: assetLinks,
            assetDownloadLifetime: assetDownloadLifetime, now: api.now(), peerAddress: PeerAddress.current,
            logger: context.logger, transactionRecordLimit: transactionRecordLimit)
        do {
            return Self.jsonResponse(try await api.handle(call))
        } catch var error as CloudKitError where error.code == .authenticationRequired {
            // A valid API token but no user: the handler needs one, who can sign in.
            error.redirectURL = error.redirectURL ?? SignInPage.path(container: container, environment: environment)
            error.redirectURL = await signInURL(error, request: request)
            throw error
        }
    }

    /// The absolute `redirectURL` of an AUTHENTICATION_REQUIRED error that has a sign-in page
    /// path, when the container lets users sign in there; `nil` otherwise (CloudKit's answer
    /// without a sign-in URL, as before built-in accounts).
    private func signInURL(_ error: CloudKitError, request: Request) async -> String? {
        guard error.code == .authenticationRequired, let path = error.redirectURL, let accounts = api.signIn,
            let container = SignInPage.container(ofPath: path),
            (try? await accounts.containerSettings(container).passwords) == true
        else { return nil }
        return origins.responseOrigin(request) + path
    }

    /// The request body, read up to `limit` bytes: a longer one is refused as soon as it
    /// passes the limit, without reading the rest (the connection then closes, see
    /// ``HTTPConnectionGuard``).
    static func collectBody(_ request: Request, limit: Int, operation: APIOperation) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        do {
            for try await buffer in request.body {
                guard buffer.readableBytes <= limit - bytes.count else {
                    throw bodyTooLarge(operation, limit: limit, announced: nil)
                }
                bytes.append(contentsOf: buffer.readableBytesView)
            }
        } catch let error as CloudKitError {
            throw error
        } catch {
            throw CloudKitError(
                .badRequest, "the request body could not be read to its end (\(error)): the connection failed or the "
                    + "body's framing is malformed; send the request again")
        }
        if let announced = request.headers[.contentLength].flatMap({ Int($0) }), bytes.count < announced {
            throw CloudKitError(
                .badRequest, "the request body ended after \(bytes.count) of the \(announced) bytes its Content-Length "
                    + "announced; send the request again")
        }
        return bytes
    }

    /// `LIMIT_EXCEEDED` for a body over the operation's limit.
    static func bodyTooLarge(_ operation: APIOperation, limit: Int, announced: Int?) -> CloudKitError {
        let size = announced.map { "the request body (\($0) bytes) is" } ?? "the request body is"
        return CloudKitError(
            .limitExceeded,
            "\(size) larger than \(limit) bytes, the limit of \(operation.rawValue) on this server; split it into smaller requests")
    }

    static func jsonResponse(_ json: JSON, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json.serializedBytes())))
    }

    static func errorResponse(_ error: CloudKitError) -> Response {
        var response = jsonResponse(error.wireJSON(uuid: newUUID()), status: HTTPResponse.Status(code: error.code.httpStatus))
        if let retryAfter = error.retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// The `uuid` of an error body: the request's ID (``RequestID/current``), so that a
    /// client's error report leads to the server's log lines; a new UUID outside a request.
    static func newUUID() -> String { RequestID.current ?? UUID().uuidString.lowercased() }
}
