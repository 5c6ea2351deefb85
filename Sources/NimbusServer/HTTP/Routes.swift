import Foundation
import Hummingbird
import NIOCore
import NimbusProtocol

/// The HTTP routes: the CloudKit API under `/database/1/…` (push tokens also under
/// `/device/1/…`), the OpenAPI document and a health check.
enum Routes {
    static func build(
        responder: APIResponder, statistics: RequestStatistics, metrics: MetricsEndpoint?, origins: OriginPolicy,
        crossOrigin: CrossOriginRule
    ) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        // First, so that they wrap every route added after them: the request's ID (its logger,
        // its error bodies, its response header), then the statistics (and `/metrics`' counts).
        router.add(middleware: RequestIDMiddleware())
        router.add(middleware: RequestStatisticsMiddleware(statistics: statistics))
        // Before any route: with a public URL, a request naming another host goes no further.
        router.add(middleware: HostCheckMiddleware(origins: origins))
        // Before any route reads a body: `Expect: 100-continue` is answered when one does.
        router.add(middleware: ExpectContinueMiddleware())
        // Browser apps on a container's allowed origins read its API's answers (CORS).
        router.add(middleware: CrossOriginMiddleware(rule: crossOrigin))
        metrics?.add(to: router)
        router.on("/database/**", method: .post) { request, context in
            await responder.respond(to: request, context: context)
        }
        router.on("/database/**", method: .get) { request, context in
            await responder.respond(to: request, context: context)
        }
        // CloudKit JS creates and registers a browser's push token here (``APIOperation/isDeviceOperation``).
        router.on("/device/**", method: .post) { request, context in
            await responder.respond(to: request, context: context)
        }
        router.on("/device/**", method: .get) { request, context in
            await responder.respond(to: request, context: context)
        }
        router.get("/openapi.yaml") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/yaml"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: OpenAPIDocument.text)))
        }
        router.get("/health") { _, _ in
            APIResponder.jsonResponse(.object(["status": "ok"]))
        }
        return router
    }
}

/// A route the HTTP router serves: its method and path pattern as the router spells it
/// (`/database/**` is the CloudKit API, dispatched on ``APIOperation``).
public struct RegisteredRoute: Sendable, Hashable, CustomStringConvertible {
    public var method: String
    public var path: String

    public init(method: String, path: String) {
        self.method = method
        self.path = path
    }

    public var description: String { "\(method) \(path)" }
}

/// The OpenAPI 3 description of the API, shipped as a resource.
public enum OpenAPIDocument {
    /// The YAML text of `openapi.yaml`.
    public static let text: String = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"),
            let text = try? String(contentsOf: url, encoding: .utf8)
        else { return "openapi: 3.0.3\n" }
        return text
    }()
}
