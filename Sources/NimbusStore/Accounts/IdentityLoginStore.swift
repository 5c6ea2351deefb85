/// What signing in with an identity provider's ID token (Sign in with Apple, Google, any
/// OpenID Connect issuer) needs from storage: the issuers a container accepts, the tokens
/// already exchanged, and the link from an issuer's subject to a Nimbus user.
public protocol IdentityLoginStore: Sendable {
    /// The issuers whose ID tokens `container` accepts (none until an operator adds one).
    /// Fails with an ``AccountError`` for an unknown container.
    func identityIssuers(container: String) async throws -> [IdentityIssuer]

    /// Adds an issuer to a container, or replaces the one with the same ``IdentityIssuer/issuer``.
    func addIdentityIssuer(_ issuer: IdentityIssuer, container: String) async throws

    /// Removes an issuer from a container; `false` if the container did not accept it.
    func removeIdentityIssuer(_ issuer: String, container: String) async throws -> Bool

    /// Records that an ID token was exchanged, until it expires; `false` when it was
    /// exchanged before (a replay). Forgets tokens that expired before `now`.
    func useIdentityToken(id: String, expiresAt: Int64, now: Int64) async throws -> Bool

    /// The login of an issuer's subject, linked on its first sign-in: to the user whose
    /// built-in account has the verified address `verifiedEmail` (the issuer vouches for it),
    /// else to a new user (account name: the address, or `issuer-subject` without one).
    func linkIdentityLogin(
        issuer: String, subject: String, email: String?, verifiedEmail: String?, now: Int64
    ) async throws -> UserLogin
}
