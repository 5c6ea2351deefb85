import Crypto
import Foundation
import JWTKit
import NimbusProtocol
import NimbusStore

/// Who an ID token says its bearer is, once ``IdentityTokenVerifier`` accepted it.
public struct VerifiedIdentity: Sendable, Equatable {
    /// The issuer, as the container configures it.
    public var issuer: String
    /// The issuer's stable identifier of the user (`sub`).
    public var subject: String
    public var email: String?
    public var emailVerified: Bool
    /// Identifies this token for replay protection: its `jti`, or the SHA-256 (hex) of the token.
    public var tokenID: String
    /// When the token expires (milliseconds since the epoch): a replay guard keeps its ID until then.
    public var expiresAt: Int64
}

/// Checks OpenID Connect ID tokens (Sign in with Apple, Google, any issuer with a JWKS):
/// signature by a key the issuer publishes, issuer, audience, expiry, not-before, issued-at,
/// and the nonce the client says it used.
///
/// The signature is verified by JWTKit with keys from ``IssuerKeySets``; the claims are
/// checked here against the server's clock with ``leeway`` for clock skew.
struct IdentityTokenVerifier: Sendable {
    let keySets: IssuerKeySets
    let clock: WallClock
    var leeway: Int64 = 60_000
    /// ID tokens are a kilobyte or two; longer ones are refused before parsing.
    static let maxTokenBytes = 16 << 10

    init(fetcher: any KeySetFetching, clock: WallClock) {
        self.keySets = IssuerKeySets(fetcher: fetcher, clock: clock)
        self.clock = clock
    }

    /// The identity `token` proves, among `issuers` (a container's configuration).
    ///
    /// - Parameter nonce: the nonce the client put in its sign-in request. A token that
    ///   carries a nonce is accepted only with the same one, and a given nonce only with a
    ///   token that carries it.
    func verify(_ token: String, issuers: [IdentityIssuer], nonce: String?) async throws(CloudKitError) -> VerifiedIdentity {
        guard token.utf8.count <= Self.maxTokenBytes else { throw Self.refused("the ID token is longer than 16 KiB") }
        // Unverified first look: which issuer, which key.
        let header: JWTHeader
        let unverified: IDTokenClaims
        do {
            (header, unverified, _) = try DefaultJWTParser().parse(Array(token.utf8), as: IDTokenClaims.self)
        } catch {
            throw Self.refused("the ID token is not a JWT with the claims iss, sub, aud and exp")
        }
        guard let issuer = issuers.first(where: { $0.issued(unverified.iss.value) }) else {
            throw Self.refused(
                "this container does not accept ID tokens of '\(unverified.iss.value)'; an operator adds issuers with "
                    + "'nimbus container issuer add'")
        }
        guard let kid = header.kid else { throw Self.refused("the ID token names no signing key (kid)") }
        let keys = try await keySets.keys(of: issuer, kid: kid)
        let claims: IDTokenClaims
        do {
            claims = try await keys.verify(token, as: IDTokenClaims.self)
        } catch {
            throw Self.refused("the ID token's signature does not verify with \(issuer.issuer)'s key '\(kid)'")
        }
        try check(claims, issuer: issuer, nonce: nonce)
        let tokenID = claims.jti?.value ?? SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
        return VerifiedIdentity(
            issuer: issuer.issuer, subject: claims.sub.value, email: claims.email,
            emailVerified: claims.emailVerified?.value ?? false, tokenID: tokenID,
            expiresAt: Int64((claims.exp.value.timeIntervalSince1970 * 1000).rounded()))
    }

    private func check(_ claims: IDTokenClaims, issuer: IdentityIssuer, nonce: String?) throws(CloudKitError) {
        let now = clock.nowMillis()
        func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        guard millis(claims.exp.value) + leeway > now else { throw Self.refused("the ID token expired; sign in again") }
        if let nbf = claims.nbf, millis(nbf.value) - leeway > now {
            throw Self.refused("the ID token is not valid yet (nbf); check the device's clock")
        }
        if let iat = claims.iat, millis(iat.value) - leeway > now {
            throw Self.refused("the ID token was issued in the future (iat); check the device's clock")
        }
        guard !claims.sub.value.isEmpty else { throw Self.refused("the ID token names no subject (sub)") }
        guard claims.aud.value.contains(where: issuer.audiences.contains) else {
            throw Self.refused(
                "the ID token is for \(claims.aud.value.joined(separator: ", ")), not for a client this container accepts "
                    + "from \(issuer.issuer)")
        }
        switch (claims.nonce, nonce) {
        case (nil, nil): break
        case (let claimed?, let given?) where claimed == given: break
        case (_?, nil): throw Self.refused("the ID token carries a nonce: send the nonce the sign-in request used")
        default: throw Self.refused("the ID token's nonce is not the one sent; sign in again")
        }
    }

    static func refused(_ reason: String) -> CloudKitError {
        CloudKitError(.authenticationFailed, reason)
    }
}
