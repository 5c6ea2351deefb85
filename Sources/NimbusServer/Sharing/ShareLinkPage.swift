import Hummingbird
import NimbusProtocol

/// `GET /share/{container}/{environment}/{shortGUID}`: what a share's URL opens in a
/// browser. It shows no data of the share (anyone may hold the link): it names the
/// container, gives the short GUID for the app to resolve (`records/resolve`) and accept
/// (`records/accept`) once its user is signed in, and, as JSON for clients that ask with
/// `Accept: application/json`, the same three values.
enum ShareLinkPage {
    static func path(container: String, environment: ContainerEnvironment, shortGUID: String) -> String {
        "/share/\(container)/\(environment.rawValue)/\(shortGUID)"
    }

    static func add(to router: Router<BasicRequestContext>) {
        router.get("/share/{container}/{environment}/{shortGUID}") { request, context in
            guard let container = context.parameters.get("container"),
                let environment = context.parameters.get("environment").flatMap(ContainerEnvironment.init(rawValue:)),
                let guid = context.parameters.get("shortGUID"), guid.utf8.count <= 64
            else {
                return SignInPage.page(status: .notFound, title: "Not found", body: "<p>No such share link.</p>")
            }
            if request.headers[.accept]?.contains("application/json") == true {
                return APIResponder.jsonResponse(
                    .object([
                        "containerIdentifier": .string(container), "environment": .string(environment.rawValue),
                        "shortGUID": .string(guid),
                    ]))
            }
            return SignInPage.page(
                status: .ok, title: "Shared with you",
                body: """
                    <h1>Shared with you</h1>
                    <p>This link opens an item shared in the app of <b>\(FormText.html(container))</b>.
                    Open it in that app and sign in to see it.</p>
                    <p>Share code: <code>\(FormText.html(guid))</code></p>
                    """)
        }
    }
}
