import Foundation
import NimbusProtocol

/// The `changes/database` token of a user's shared database, signed and bound like every
/// other token (see ``ChangeTokens``).
///
/// The shared database has no change log of its own: its token carries the zones the user
/// could read and their versions, an opaque payload the server compares with the zones now
/// shared. The wire form is base64url (no padding) of `"s2:<key>:<tag>:"`, the payload, and
/// the first 16 bytes of an HMAC-SHA256 over the feed's identity (container, environment,
/// user) and those bytes. Another user's token, another container's or environment's, or an
/// altered one is BAD_REQUEST; one signed with a replaced secret is CHANGE_TOKEN_EXPIRED.
extension ChangeTokens {
    /// Longer text is no shared-database token: the payload grows with the zones shared with
    /// the user (about 60 bytes a zone), so it has a limit of its own.
    static let maximumSharedTokenLength = 256 << 10
    static let sharedKind = "s2"

    /// Signs `payload` as the shared database token of `user` in a container environment.
    public func sharedDatabase(_ payload: [UInt8], user: String, container: String, environment: ContainerEnvironment)
        -> String
    {
        let identity = Identity.shared(user: user, container: container, environment: environment)
        let signed = Array("\(Self.sharedKind):\(keyID):\(identity.tag):".utf8) + payload
        return Base64URL.encode(signed + mac(signed, identity))
    }

    /// The payload of a shared database token issued for `user` in a container environment.
    /// - Throws: BAD_REQUEST for text that is not such a token (malformed, altered, another
    ///   user's or feed's); CHANGE_TOKEN_EXPIRED for the unsigned format of earlier releases
    ///   (base64 JSON) and for a replaced secret.
    public func decodeSharedDatabase(
        _ token: String, user: String, container: String, environment: ContainerEnvironment
    ) throws(CloudKitError) -> [UInt8] {
        let notOurs = CloudKitError.badRequest(
            "the sync token '\(Self.excerpt(token))' is not a token of this shared database; pass a token exactly as "
                + "a response returned it, or fetch without one")
        guard token.utf8.count <= Self.maximumSharedTokenLength else { throw notOurs }
        if Self.isUnsignedSharedToken(token) {
            throw CloudKitError(
                .changeTokenExpired,
                "this sync token was issued by an earlier release of the server, before shared database tokens were "
                    + "signed; fetch again without a sync token")
        }
        guard let bytes = Base64URL.decode(token), bytes.count > Self.macByteCount else { throw notOurs }
        // "s2:" + key + ":" + tag + ":" (both 8 hex digits), then the payload.
        let headerLength = Self.sharedKind.utf8.count + 1 + 8 + 1 + 8 + 1
        guard bytes.count >= headerLength + Self.macByteCount,
            let header = String(bytes: bytes.prefix(headerLength), encoding: .utf8)
        else { throw notOurs }
        let parts = header.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[3].isEmpty else { throw notOurs }
        guard parts[0] == Self.sharedKind else {
            throw .badRequest("the sync token is not a token of the shared database's changes/database; pass the token it returned")
        }
        try checkSeal(
            bytes, key: parts[1], tag: parts[2],
            for: .shared(user: user, container: container, environment: environment), zoneID: nil)
        return Array(bytes[headerLength..<(bytes.count - Self.macByteCount)])
    }

    /// Whether `token` is the unsigned format of earlier releases: standard base64 of a JSON array.
    static func isUnsignedSharedToken(_ token: String) -> Bool {
        guard let data = Data(base64Encoded: token), let first = data.first else { return false }
        return first == UInt8(ascii: "[") && data.last == UInt8(ascii: "]")
    }
}

extension ChangeTokens.Identity {
    static func shared(user: String, container: String, environment: ContainerEnvironment) -> Self {
        Self(["shared-database", container, environment.rawValue, user])
    }
}
