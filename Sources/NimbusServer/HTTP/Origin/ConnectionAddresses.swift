import NIOCore

/// The IP address of the client a request came from, as the socket says (never a header a
/// client could forge): bound by the HTTP channel around the requests of each connection,
/// read by sign-in throttling, the throttle and ``OriginPolicy`` (is the peer a trusted proxy?).
package enum PeerAddress {
    @TaskLocal package static var current: String?
}

/// The server's own address and port that a connection reached (the socket's local end, as
/// the socket says): the origin of mailed links when no public URL is configured, and a
/// `Host` the server always answers to. Bound by the HTTP channel like ``PeerAddress``.
package enum LocalAddress {
    @TaskLocal package static var current: LocalEndpoint?
}

/// An IP address and port of the server's own.
package struct LocalEndpoint: Sendable, Hashable {
    package var ip: String
    package var port: Int

    package init(ip: String, port: Int) {
        self.ip = ip
        self.port = port
    }

    /// The IP address and port of a socket address; `nil` for a Unix socket or none.
    package init?(_ address: SocketAddress?) {
        guard let address, let ip = address.ipAddress else { return nil }
        self.init(ip: ip, port: address.port ?? 0)
    }

    /// `ip:port`, an IPv6 address in brackets.
    package var authority: String { ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)" }

    /// The `Host` values that name this endpoint: `ip:port`, and on loopback also
    /// `localhost:port`, `127.0.0.1:port` and `[::1]:port`.
    package var authorities: Set<String> {
        var names: Set<String> = [authority.lowercased()]
        if AddressRange.loopback.contains(where: { $0.contains(ip) }) {
            names.formUnion(["localhost:\(port)", "127.0.0.1:\(port)", "[::1]:\(port)"])
        }
        return names
    }
}
