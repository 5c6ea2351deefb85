import HTTPTypes
import Hummingbird

/// Lets a browser app on an origin the container allows read the API's answers
/// (``CrossOriginRule``): an answer to `/database/1/{container}/…` or
/// `/device/1/{container}/…` whose request carries an `Origin` header that is exactly one of
/// the container's allowed origins gets `Access-Control-Allow-Origin` naming it. Any other
/// origin gets no such header, so the browser keeps the answer from the page; the request
/// itself is answered as without the header (an `Origin` header is no credential).
///
/// CloudKit JS sends its requests as CORS "simple" requests (GET, or POST with a `text/plain`
/// body, credentials in the query), so no preflight is involved; Nimbus answers no `OPTIONS`
/// there. A request from the server's own origin is not looked at.
struct CrossOriginMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let rule: CrossOriginRule

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response = try await next(request, context)
        await rule.apply(to: &response, request: request, container: Self.container(ofPath: request.uri.path))
        return response
    }

    /// The container of an API path, `/database/1/{container}/…` or `/device/1/{container}/…`.
    static func container(ofPath path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 3, parts[0] == "database" || parts[0] == "device", parts[1] == "1" else { return nil }
        return String(parts[2])
    }
}
