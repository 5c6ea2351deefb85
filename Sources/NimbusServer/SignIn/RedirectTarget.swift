import Foundation

/// Where the sign-in page may send a signed-in user: a URL on one of the container's allowed
/// origins, never anywhere else. Pure: decides on strings.
enum RedirectTarget {
    /// An origin as `nimbus container set-signin --redirect-origin` takes it: `http` or
    /// `https`, a host, an optional port, nothing else. Returns it normalized
    /// (`https://app.example`, scheme and host lowercased), or `nil`.
    static func normalizedOrigin(_ text: String) -> String? {
        guard let components = URLComponents(string: text), let origin = origin(of: components),
            components.path.isEmpty || components.path == "/", components.query == nil, components.fragment == nil
        else { return nil }
        return origin
    }

    /// The URL to send the user to, or why not: `requested` must be an absolute `http(s)` URL
    /// without user info on an allowed origin. Without one, the first allowed origin's root.
    static func resolve(_ requested: String?, allowed: [String]) -> Result<String, Refusal> {
        let allowedSet = Set(allowed.compactMap(normalizedOrigin))
        guard let requested, !requested.isEmpty else {
            guard let first = allowed.first.flatMap(normalizedOrigin) else { return .failure(.noOrigins) }
            return .success(first + "/")
        }
        guard let components = URLComponents(string: requested), let origin = origin(of: components) else {
            return .failure(.notAllowed(String(requested.prefix(200))))
        }
        guard allowedSet.contains(origin) else { return .failure(.notAllowed(origin)) }
        return .success(requested)
    }

    /// The `Access-Control-Allow-Origin` for a request whose `Origin` header is `header`: the
    /// header itself when it is exactly (as browsers write it) one of the `allowed` origins,
    /// `nil` otherwise (`null`, another origin, anything that is not an origin).
    static func crossOriginAllowed(_ header: String, allowed: [String]) -> String? {
        guard let origin = normalizedOrigin(header), origin == header,
            allowed.contains(where: { normalizedOrigin($0) == origin })
        else { return nil }
        return origin
    }

    /// `target` with `ckWebAuthToken` set in its query (any earlier value removed), before its fragment.
    static func handingBack(token: String, to target: String) -> String {
        guard var components = URLComponents(string: target) else { return target }
        var items = (components.queryItems ?? []).filter { $0.name != "ckWebAuthToken" }
        items.append(URLQueryItem(name: "ckWebAuthToken", value: token))
        components.queryItems = items
        return components.string ?? target
    }

    /// Why a redirect is refused, in words for the error page.
    enum Refusal: Error, Equatable {
        case noOrigins
        case notAllowed(String)

        var message: String {
            switch self {
            case .noOrigins:
                return "This container lists no address to return to after signing in. Its operator adds one with "
                    + "`nimbus container set-signin CONTAINER --redirect-origin https://app.example`."
            case .notAllowed(let origin):
                return "This sign-in page does not send you back to \(origin): it is not an address this container "
                    + "allows. The app that sent you here may be misconfigured, or not the app it claims to be."
            }
        }
    }

    private static func origin(of components: URLComponents) -> String? {
        guard let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host?.lowercased(), !host.isEmpty, components.user == nil, components.password == nil
        else { return nil }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = components.port.flatMap { $0 == defaultPort ? nil : $0 }
        return "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }
}

/// Checks the origins operators list for a container's sign-in page.
public enum SignInOrigins {
    /// `text` as an origin (`https://app.example`, scheme and host lowercased, default port
    /// dropped), or `nil` when it is not `http(s)://host[:port]`.
    public static func normalized(_ text: String) -> String? { RedirectTarget.normalizedOrigin(text) }
}
