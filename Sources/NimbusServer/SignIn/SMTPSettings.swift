import Foundation
import NIOSSL

/// Where ``SMTPMailSender`` hands mail over, and how: written as a URL
/// (`nimbus serve --smtp-url`):
///
/// - `smtp://user:password@mail.example.com:587`: STARTTLS, required (port 587 by default)
/// - `smtps://user:password@mail.example.com`: TLS from the first byte (port 465 by default)
/// - `smtp+insecure://127.0.0.1:25`: no TLS, for a relay on the same machine; a password is
///   only sent this way to a loopback address
///
/// User name and password are percent-decoded; the password may instead come from the
/// environment (`NIMBUS_SMTP_PASSWORD`) so that it does not show in the process list.
public struct SMTPSettings: Sendable {
    /// How the connection is protected.
    public enum Security: String, Sendable {
        /// Plain TCP, then `STARTTLS` before anything else is sent; a server that does not
        /// offer it is an error.
        case startTLS
        /// TLS from the first byte (`smtps`, port 465).
        case implicitTLS
        /// No TLS: only for a relay on the same machine or a test.
        case none
    }

    public var host: String
    public var port: Int
    public var security: Security
    public var username: String?
    public var password: String?
    /// The address mail comes from (`MAIL FROM` and the `From` header).
    public var from: String
    /// The name shown beside ``from``, if any.
    public var fromName: String?
    /// The name the server gives itself in `EHLO`.
    public var clientName = "localhost"
    /// How long connecting may take.
    public var connectTimeout: Duration = .seconds(15)
    /// How long the server may take to answer any one command.
    public var commandTimeout: Duration = .seconds(60)
    /// How the server's certificate is checked (against the system's roots by default).
    public var tls: TLSConfiguration = .makeClientConfiguration()

    public init(host: String, port: Int, security: Security, from: String) {
        self.host = host
        self.port = port
        self.security = security
        self.from = from
    }

    /// Settings from an SMTP URL (see the type's documentation).
    /// - Parameter password: overrides the URL's password (read from the environment).
    public init(url: String, from: String, password: String? = nil) throws(SMTPError) {
        func refuse(_ why: String) -> SMTPError { SMTPError(.invalidConfiguration, "--smtp-url: \(why)") }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            throw refuse("not a URL; write smtp://user:password@host:587")
        }
        let modes: [String: (Security, Int)] = ["smtp": (.startTLS, 587), "smtps": (.implicitTLS, 465), "smtp+insecure": (.none, 25)]
        guard let mode = modes[scheme] else {
            throw refuse("the scheme must be smtp (STARTTLS), smtps (TLS) or smtp+insecure (a local relay)")
        }
        let defaultPort = mode.1
        security = mode.0
        var host = components.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw refuse("the URL names no host") }
        guard components.path.isEmpty || components.path == "/", components.query == nil else {
            throw refuse("the URL has a path or a query; write only scheme://user:password@host:port")
        }
        let port = components.port ?? defaultPort
        guard (1...65535).contains(port) else { throw refuse("the port must be from 1 to 65535") }
        self.host = host
        self.port = port
        self.from = try SMTPMessage.checked(address: from, role: "sender (--mail-from)")
        username = components.user?.removingPercentEncoding.flatMap { $0.isEmpty ? nil : $0 }
        self.password = password ?? components.password?.removingPercentEncoding
        guard username != nil || self.password == nil else { throw refuse("a password without a user name") }
        try checkCredentialsAreProtected()
    }

    /// Refuses to send a password in plain text anywhere but to this machine.
    func checkCredentialsAreProtected() throws(SMTPError) {
        guard security == .none, username != nil, !Self.isLoopback(host) else { return }
        throw SMTPError(
            .invalidConfiguration,
            "smtp+insecure sends the password in plain text; it is only allowed to a loopback address, not \(host)")
    }

    /// Whether `host` is an IPv4 or IPv6 address literal (no TLS server name for those).
    static func isIPAddress(_ host: String) -> Bool {
        host.contains(":") || (host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." })
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || (isIPAddress(host) && host.hasPrefix("127."))
    }
}
