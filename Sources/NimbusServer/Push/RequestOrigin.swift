import Foundation
import HTTPTypes
import Hummingbird

/// The `scheme://host[:port]` a client reached the server at, for URLs the server hands out
/// (`webcourierURL`): the configured public base URL, else what the request says.
///
/// The headers are the client's (or its proxies'): a value is used only when it is a plain
/// scheme (`http`, `https`) or authority (`host`, `host:port`, `[v6]:port`); a list, as
/// several proxies write it (`a.example, b.example`), gives its first element, the one the
/// client named. Anything else (a path, a user, spaces) is ignored for the next source.
package enum RequestOrigin {
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwardedHost = HTTPField.Name("X-Forwarded-Host")!

    package static func of(_ request: Request, configured: String?) -> String {
        if var configured, !configured.isEmpty {
            while configured.hasSuffix("/") { configured.removeLast() }
            return configured
        }
        let scheme = [request.headers[forwardedProto], request.head.scheme].lazy.compactMap(scheme(_:)).first ?? "http"
        let host = [request.headers[forwardedHost], request.head.authority].lazy.compactMap(authority(_:)).first ?? "localhost"
        return "\(scheme)://\(host)"
    }

    /// `http` or `https`, from the first element of a header value.
    static func scheme(_ value: String?) -> String? {
        guard let first = firstElement(value)?.lowercased(), first == "http" || first == "https" else { return nil }
        return first
    }

    /// A host with an optional port, from the first element of a header value.
    static func authority(_ value: String?) -> String? {
        guard let first = firstElement(value), !first.isEmpty, first.utf8.count <= 255 else { return nil }
        let allowed = first.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "-", ".", ":", "[", "]", "_": return true
            default: return false
            }
        }
        return allowed ? first : nil
    }

    private static func firstElement(_ value: String?) -> String? {
        value?.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.trimmingCharacters(in: .whitespaces) }
    }
}
