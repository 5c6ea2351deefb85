/// Where clients reach the server, and whom it believes about that (docs/SECURITY.md).
///
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.origin.publicURL = try PublicURL("https://sync.example.com")
/// configuration.origin.trustedProxies = [try AddressRange("10.0.0.0/8")]
/// ```
public struct OriginSettings: Sendable {
    /// The address clients reach the server at (`--public-url`). When set, every absolute URL
    /// the server writes (mailed links, `webcourierURL`, asset URLs, share URLs, sign-in
    /// redirects) starts with it, and a request naming another host is refused. Mailed links
    /// need it: without it they point at the server's own socket address.
    public var publicURL: PublicURL?
    /// The reverse proxies whose `Forwarded`, `X-Forwarded-Host` and `X-Forwarded-Proto` the
    /// server believes (`--trusted-proxy`). From any other peer those headers are ignored.
    public var trustedProxies: [AddressRange]

    public init(publicURL: PublicURL? = nil, trustedProxies: [AddressRange] = []) {
        self.publicURL = publicURL
        self.trustedProxies = trustedProxies
    }
}
