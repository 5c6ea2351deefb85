/// Sessions and built-in accounts: how long a session lives unused, the password hash's
/// cost, how failed sign-ins are throttled and where mail goes.
public struct SignInSettings: Sendable {
    /// A session unused for this long expires (`nimbus serve --session-idle-days`, 30 by default).
    public var sessionIdle: Duration = .seconds(30 * 24 * 3600)
    /// A session's "last seen" is written at most this often (each write costs a transaction).
    public var lastSeenGranularity: Duration = .seconds(60)
    /// The bcrypt cost of password hashes (2^cost rounds), 10 to 31.
    public var passwordCost: UInt8 = 12
    /// How long a mailed verification or password reset code works.
    public var codeLifetime: Duration = .seconds(3600)
    /// Failed sign-ins one account may make in a burst, and how often one more is allowed.
    public var accountBurst = 5
    public var accountRefill: Duration = .seconds(300)
    /// Failed sign-ins one client address may make in a burst, and how often one more is allowed.
    public var addressBurst = 20
    public var addressRefill: Duration = .seconds(30)
    /// How often the server checks that the sessions of connected push devices are still
    /// valid (revoked by the CLI or another node, or expired) and closes those that are not.
    public var pushSessionCheckInterval: Duration = .seconds(5)
    /// Where verification and password reset mail goes: ``SMTPMailSender``, or `nil` for the
    /// server log (``LoggingMailSender``).
    public var mailSender: (any MailSender)?
    /// Where identity issuers' OpenID configurations and keys (JWKS) are read: HTTPS by default.
    public var identityKeys: any KeySetFetching = HTTPKeySetFetcher()

    public init() {}
}
