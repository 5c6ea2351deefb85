import Foundation

/// The address clients and mailed links reach the server at, as the operator configured it
/// (`nimbus serve --public-url https://sync.example.com`): `http` or `https`, a host and an
/// optional port, nothing else.
///
/// ```swift
/// let url = try PublicURL("https://Sync.Example.com/")
/// url.origin                                   // "https://sync.example.com"
/// url.names(authority: "sync.example.com:443") // true
/// ```
public struct PublicURL: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: String
    /// The host, lowercased; an IPv6 address keeps its brackets.
    public let host: String
    /// The port when the URL names one other than the scheme's default.
    public let port: Int?

    /// Parses an operator's `--public-url`.
    /// - Throws: ``OriginSettingError`` naming what is wrong (a path, a user, a query…).
    public init(_ text: String) throws(OriginSettingError) {
        let trimmed = text.hasSuffix("/") ? String(text.dropLast()) : text
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else { throw OriginSettingError("--public-url must start with http:// or https://, got '\(text)'") }
        guard components.user == nil, components.password == nil, components.query == nil, components.fragment == nil,
            components.path.isEmpty
        else {
            throw OriginSettingError(
                "--public-url is a scheme, a host and an optional port (https://sync.example.com:8443), without a path, "
                    + "user, query or fragment; got '\(text)'")
        }
        guard let rawHost = components.encodedHost, !rawHost.isEmpty else {
            throw OriginSettingError("--public-url needs a host, got '\(text)'")
        }
        let host = rawHost.contains(":") && !rawHost.hasPrefix("[") ? "[\(rawHost)]" : rawHost
        guard Authority.isPlain(host) else { throw OriginSettingError("--public-url's host '\(rawHost)' is not a host name") }
        if let port = components.port, !(1...65535).contains(port) {
            throw OriginSettingError("--public-url's port must be 1 to 65535, got \(port)")
        }
        self.scheme = scheme
        self.host = host.lowercased()
        let defaultPort = scheme == "https" ? 443 : 80
        self.port = components.port == defaultPort ? nil : components.port
    }

    /// `scheme://host[:port]`, what absolute URLs start with.
    public var origin: String { "\(scheme)://\(authority)" }

    /// `host[:port]`, as a `Host` header names it.
    public var authority: String { port.map { "\(host):\($0)" } ?? host }

    public var description: String { origin }

    /// Whether a `Host` header value names this URL's host and port (the default port written
    /// out or left off alike; case does not matter).
    public func names(authority value: String) -> Bool {
        let value = value.lowercased()
        let defaultPort = scheme == "https" ? 443 : 80
        return value == authority || (port == nil && value == "\(host):\(defaultPort)")
    }
}

/// A `--public-url` or `--trusted-proxy` value the server cannot use; the message says why.
public struct OriginSettingError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Checks on `host[:port]` text from a header or a setting.
enum Authority {
    /// A host with an optional port, of the characters host names and IP literals use: no
    /// user, path, spaces or anything a URL would read as more than a host.
    static func isPlain(_ value: String) -> Bool {
        guard !value.isEmpty, value.utf8.count <= 255 else { return false }
        return value.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "-", ".", ":", "[", "]", "_": true
            default: false
            }
        }
    }
}
