import Hummingbird

/// The answer on a URL that names its container only through a token the server looks up
/// (an asset URL, a web courier URL), with that container once the token was found, so the
/// route can apply the ``CrossOriginRule`` to the container the token belongs to (never to
/// one a request names).
struct TokenAnswer {
    var response: Response
    /// The container of the token; `nil` when the token named nothing this server issued.
    var container: String?

    init(_ response: Response, container: String?) {
        self.response = response
        self.container = container
    }

    /// The response `respond` gives, with the container it sets once it found the token.
    static func finding(_ respond: (_ container: inout String?) async -> Response) async -> TokenAnswer {
        var container: String?
        let response = await respond(&container)
        return TokenAnswer(response, container: container)
    }

    /// The response, readable by the request's origin when the ``CrossOriginRule`` allows it
    /// for the token's container.
    func response(to request: Request, crossOrigin: CrossOriginRule) async -> Response {
        var response = response
        await crossOrigin.apply(to: &response, request: request, container: container)
        return response
    }
}
