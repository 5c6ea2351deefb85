import HTTPTypes
import Hummingbird

/// What the server knows about how one request reached it: the `Host` it named, the scheme,
/// its headers and the two ends of its socket. Every value but the socket's is the client's
/// (or its proxies') to choose.
package struct RequestArrival: Sendable {
    package var authority: String?
    package var scheme: String?
    package var headers: HTTPFields
    package var peer: String?
    package var local: LocalEndpoint?

    package init(
        authority: String?, scheme: String? = nil, headers: HTTPFields = [:], peer: String? = nil,
        local: LocalEndpoint? = nil
    ) {
        self.authority = authority
        self.scheme = scheme
        self.headers = headers
        self.peer = peer
        self.local = local
    }

    /// `request` as it arrived on the connection the current task serves.
    package init(_ request: Request) {
        self.init(
            authority: request.head.authority, scheme: request.head.scheme, headers: request.headers,
            peer: PeerAddress.current, local: LocalAddress.current)
    }
}

/// The origins (`scheme://host[:port]`) of the URLs the server writes, and the hosts it
/// answers to. Pure: decides on ``RequestArrival`` values and the operator's settings.
///
/// - A **configured public URL** wins everywhere, and a request naming another host is refused.
/// - **Mailed links** never come from a request: the public URL, else the server's own socket
///   address (a link that works on the server's network, never one a client chose).
/// - **URLs in a response** go back to the client that asked: without a public URL they
///   follow its `Host`, and a trusted proxy's forwarding headers; anyone else's forwarding
///   headers are ignored.
package struct OriginPolicy: Sendable {
    package let settings: OriginSettings

    package init(_ settings: OriginSettings) { self.settings = settings }

    /// The origin of absolute URLs in the answer to a request.
    package func responseOrigin(_ arrival: RequestArrival) -> String {
        if let publicURL = settings.publicURL { return publicURL.origin }
        let forwarded = forwardedHeaders(arrival)
        let scheme = forwarded.scheme ?? arrival.scheme.flatMap(ForwardedHeaders.parseScheme) ?? "http"
        if let host = forwarded.host ?? arrival.authority.flatMap({ Authority.isPlain($0) ? $0 : nil }) {
            return "\(scheme)://\(host)"
        }
        return "\(scheme)://\(arrival.local?.authority ?? "localhost")"
    }

    /// The origin of links in mail: the public URL, else the socket address the request reached.
    package func mailOrigin(_ arrival: RequestArrival) -> String {
        settings.publicURL?.origin ?? "http://\(arrival.local?.authority ?? "localhost")"
    }

    /// Whether answers to the request travel over HTTPS (for a cookie's `Secure`).
    package func isSecure(_ arrival: RequestArrival) -> Bool {
        responseOrigin(arrival).hasPrefix("https://")
    }

    /// Why the server does not answer the request (its host is not the public URL's), or
    /// `nil` when it does. Without a public URL every host is answered.
    package func misdirection(_ arrival: RequestArrival) -> String? {
        guard let publicURL = settings.publicURL else { return nil }
        let named = forwardedHeaders(arrival).host ?? arrival.authority
        guard let named, !named.isEmpty else {
            return "the request names no host; this server answers to \(publicURL.authority)"
        }
        if publicURL.names(authority: named) || (arrival.local?.authorities.contains(named.lowercased()) ?? false) {
            return nil
        }
        return "this server answers to \(publicURL.authority), not to the host this request names"
    }

    /// The forwarding headers, from a trusted proxy only.
    private func forwardedHeaders(_ arrival: RequestArrival) -> ForwardedHeaders {
        guard let peer = arrival.peer, settings.trustedProxies.contains(where: { $0.contains(peer) }) else {
            return ForwardedHeaders()
        }
        return ForwardedHeaders(arrival.headers)
    }
}

extension OriginPolicy {
    package func responseOrigin(_ request: Request) -> String { responseOrigin(RequestArrival(request)) }
    package func mailOrigin(_ request: Request) -> String { mailOrigin(RequestArrival(request)) }
}
