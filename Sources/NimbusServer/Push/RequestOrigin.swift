import HTTPTypes
import Hummingbird

/// The `scheme://host[:port]` a client reached the server at, for URLs the server hands out
/// (`webcourierURL`): the configured public base URL, else what the request says.
enum RequestOrigin {
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwardedHost = HTTPField.Name("X-Forwarded-Host")!

    static func of(_ request: Request, configured: String?) -> String {
        if var configured, !configured.isEmpty {
            while configured.hasSuffix("/") { configured.removeLast() }
            return configured
        }
        let scheme = request.headers[forwardedProto] ?? request.head.scheme ?? "http"
        let host = request.headers[forwardedHost] ?? request.head.authority ?? "localhost"
        return "\(scheme)://\(host)"
    }
}
