import Foundation
import JWTKit
import NimbusServer
import NimbusStore

/// An identity provider for SDK tests: one ES256 key made here, ID tokens signed with it, and
/// its OpenID configuration and JWKS handed to the server through its fetch seam (no network).
/// (The server's tests have a fuller one with rotation and forgery, `LocalIssuer`.)
struct TestIssuer: KeySetFetching {
    let issuer = "https://id.example.test"
    let audience = "com.example.sdk"
    private let key = ES256PrivateKey()

    /// What the operator's `nimbus container issuer add` would register.
    var registration: IdentityIssuer { IdentityIssuer(issuer: issuer, audiences: [audience]) }

    private struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var exp: Date
        var iat: Date
        var nonce: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// An ID token for `subject`, valid for ten minutes.
    func idToken(subject: String, nonce: String? = nil) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: "sdk-key")
        let now = Date()
        return try await keys.sign(
            Claims(iss: issuer, sub: subject, aud: audience, exp: now.addingTimeInterval(600), iat: now, nonce: nonce),
            kid: "sdk-key")
    }

    func document(at url: URL) async throws -> [UInt8] {
        switch url.absoluteString {
        case issuer + "/.well-known/openid-configuration":
            return Array(#"{"issuer":"\#(issuer)","jwks_uri":"\#(issuer)/keys"}"#.utf8)
        case issuer + "/keys":
            guard let (x, y) = key.publicKey.parameters else { throw KeySetFetchError("the key has no parameters") }
            return Array(#"{"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","kid":"sdk-key","x":"\#(x)","y":"\#(y)"}]}"#.utf8)
        default:
            throw KeySetFetchError("no document at \(url)")
        }
    }
}
