import HTTPTypes
import Hummingbird

/// Which cross-origin browser apps may read an answer: those on one of the allowed origins of
/// the container the request is about (`nimbus container set-signin --redirect-origin`, the
/// origins its sign-in page returns to), as CloudKit answers the "Allowed Origins" of an API
/// token. The one rule for every answer that carries CORS headers: the API's
/// (``CrossOriginMiddleware``, the container from the path) and the URLs that name their
/// container only through a token the server looks up (asset URLs, the web courier).
struct CrossOriginRule: Sendable {
    let origins: OriginPolicy
    /// The origins a container allows; a container that does not exist allows none.
    let allowedOrigins: @Sendable (_ container: String) async throws -> [String]

    /// Marks `response` readable by the request's `Origin` when that is exactly one of
    /// `container`'s allowed origins (`Access-Control-Allow-Origin` naming it); a cross-origin
    /// request about a container gets `Vary: Origin` either way. A request without `Origin`,
    /// from the server's own origin, or about no known container (`nil`: an unknown token)
    /// is left alone. Returns whether the origin may read the answer.
    @discardableResult
    func apply(to response: inout Response, request: Request, container: String?) async -> Bool {
        guard let origin = request.headers[.origin], let container, origin != origins.responseOrigin(request) else {
            return false
        }
        response.headers[.vary] = "Origin"
        let allowed = (try? await allowedOrigins(container)) ?? []
        guard let value = RedirectTarget.crossOriginAllowed(origin, allowed: allowed) else { return false }
        response.headers[.accessControlAllowOrigin] = value
        return true
    }
}
