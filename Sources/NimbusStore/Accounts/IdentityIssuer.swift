/// An OpenID Connect issuer whose ID tokens a container exchanges for Nimbus sessions: Sign
/// in with Apple, Google, or any issuer that publishes its signing keys as a JWKS.
///
/// ```swift
/// let apple = IdentityIssuer.apple(audiences: ["com.example.app"])
/// let company = IdentityIssuer(issuer: "https://login.example.com", audiences: ["nimbus-app"])
/// ```
public struct IdentityIssuer: Sendable, Hashable, Codable {
    /// The `iss` claim its tokens carry, exactly (an `https` URL).
    public var issuer: String
    /// The client IDs (Apple: the app's bundle ID or Services ID; Google: the OAuth client
    /// IDs) a token's `aud` must name one of.
    public var audiences: [String]
    /// Where the issuer's keys are; `nil`: read `jwks_uri` from
    /// `{issuer}/.well-known/openid-configuration`.
    public var jwksURL: String?

    public init(issuer: String, audiences: [String], jwksURL: String? = nil) {
        self.issuer = issuer
        self.audiences = audiences
        self.jwksURL = jwksURL
    }

    /// Sign in with Apple.
    public static func apple(audiences: [String]) -> IdentityIssuer {
        IdentityIssuer(issuer: "https://appleid.apple.com", audiences: audiences, jwksURL: "https://appleid.apple.com/auth/keys")
    }

    /// Google Sign-In.
    public static func google(audiences: [String]) -> IdentityIssuer {
        IdentityIssuer(
            issuer: "https://accounts.google.com", audiences: audiences, jwksURL: "https://www.googleapis.com/oauth2/v3/certs")
    }

    /// Whether a token's `iss` names this issuer. Google writes its issuer with or without the
    /// scheme, as its documentation says; every other issuer must match exactly.
    public func issued(_ iss: String) -> Bool {
        iss == issuer || (issuer == "https://accounts.google.com" && iss == "accounts.google.com")
    }
}
