import Foundation
import JWTKit

/// The claims of an OpenID Connect ID token the server reads.
struct IDTokenClaims: JWTPayload {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var iat: IssuedAtClaim?
    var nbf: NotBeforeClaim?
    var nonce: String?
    var email: String?
    var emailVerified: BoolClaim?
    var jti: IDClaim?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, iat, nbf, nonce, email, jti
        case emailVerified = "email_verified"
    }

    /// Nothing here: ``IdentityTokenVerifier`` checks the claims against the server's clock
    /// and the container's issuers once the signature holds.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
