/// Account names of users who first signed in with an identity provider.
public enum IdentityLoginNames {
    /// `host:subject` of an issuer without an email address (`appleid.apple.com:001234.abcd`).
    public static func accountName(issuer: String, subject: String) -> String {
        let withoutScheme = issuer.hasPrefix("https://") ? issuer.dropFirst("https://".count) : Substring(issuer)
        let host = withoutScheme.split(separator: "/").first.map(String.init) ?? issuer
        return host + ":" + subject
    }
}
