import Hummingbird
import NimbusProtocol

/// Refuses a request whose host is not the configured public URL's (nor the server's own
/// socket address), before any route sees it: 400 with a CloudKit `BAD_REQUEST` body (not
/// HTTP's 421 Misdirected Request: CloudKit clients read 421 as AUTHENTICATION_REQUIRED).
/// Without a public URL every request passes.
struct HostCheckMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let origins: OriginPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let reason = origins.misdirection(RequestArrival(request)) else { return try await next(request, context) }
        return APIResponder.errorResponse(CloudKitError(.badRequest, reason))
    }
}
