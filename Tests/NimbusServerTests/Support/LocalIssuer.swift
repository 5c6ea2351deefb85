import Foundation
import JWTKit
import NIOConcurrencyHelpers
import NimbusStore

@testable import NimbusServer

/// An OpenID Connect issuer made by a test: ES256 keys it creates, tokens it signs, and its
/// OpenID configuration and JWKS handed to the server through the ``KeySetFetching`` seam
/// (no network). It counts fetches and can be taken down.
final class LocalIssuer: KeySetFetching, Sendable {
    let issuer: String
    private let signers: NIOLockedValueBox<[String: ES256PrivateKey]>
    /// The kids the JWKS publishes (a rotated-out key can still sign, to forge).
    private let published: NIOLockedValueBox<[String]>
    private let fetchCount = NIOLockedValueBox(0)
    private let down = NIOLockedValueBox(false)

    init(issuer: String = "https://login.example.test", kids: [String] = ["k1"]) {
        self.issuer = issuer
        signers = NIOLockedValueBox(Dictionary(uniqueKeysWithValues: kids.map { ($0, ES256PrivateKey()) }))
        published = NIOLockedValueBox(kids)
    }

    var jwksURL: String { issuer + "/jwks" }
    var fetches: Int { fetchCount.withLockedValue { $0 } }

    func config(audiences: [String] = ["com.example.app"], discover: Bool = true) -> IdentityIssuer {
        IdentityIssuer(issuer: issuer, audiences: audiences, jwksURL: discover ? nil : jwksURL)
    }

    /// Adds a key and publishes it (key rotation).
    func rotate(to kid: String, unpublishing old: [String] = []) {
        signers.withLockedValue { $0[kid] = ES256PrivateKey() }
        published.withLockedValue { $0 = $0.filter { !old.contains($0) } + [kid] }
    }

    /// A key under `kid` that the JWKS does not publish (a forger's).
    func forge(_ kid: String) {
        signers.withLockedValue { $0[kid] = ES256PrivateKey() }
    }

    func setDown(_ isDown: Bool) { down.withLockedValue { $0 = isDown } }

    struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var exp: Date
        var iat: Date
        var nonce: String?
        var email: String?
        var email_verified: Bool?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// A signed ID token; `edit` changes its claims first.
    func token(
        subject: String = "user-1", audience: String = "com.example.app", kid: String = "k1", now: Date = Date(),
        lifetime: TimeInterval = 600, nonce: String? = nil, email: String? = "person@example.com",
        edit: (inout Claims) -> Void = { _ in }
    ) async throws -> String {
        var claims = Claims(
            iss: issuer, sub: subject, aud: audience, exp: now.addingTimeInterval(lifetime), iat: now, nonce: nonce,
            email: email, email_verified: email != nil)
        edit(&claims)
        let key = try signers.withLockedValue { signers in
            guard let key = signers[kid] else { throw KeySetFetchError("no key \(kid)") }
            return key
        }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: kid))
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    func document(at url: URL) async throws -> [UInt8] {
        guard !down.withLockedValue({ $0 }) else { throw KeySetFetchError("the issuer is down") }
        switch url.absoluteString {
        case issuer + "/.well-known/openid-configuration":
            return Array(#"{"issuer":"\#(issuer)","jwks_uri":"\#(jwksURL)"}"#.utf8)
        case jwksURL:
            fetchCount.withLockedValue { $0 += 1 }
            let keys = published.withLockedValue { $0 }.compactMap { kid -> String? in
                guard let key = signers.withLockedValue({ $0[kid] }), let (x, y) = key.publicKey.parameters else { return nil }
                return #"{"kty":"EC","crv":"P-256","alg":"ES256","use":"sig","kid":"\#(kid)","x":"\#(x)","y":"\#(y)"}"#
            }
            return Array(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8)
        default:
            throw KeySetFetchError("no document at \(url)")
        }
    }
}
