import Crypto
import Foundation
import NimbusProtocol

/// The opaque sync tokens the store hands out, authenticated with the server's secret.
///
/// A token is a position in a feed — a version of a database's change log (allocated inside a
/// commit) or a sequence number of a user's notification collection — bound to the feed it
/// came from and signed:
///
/// - Record tokens (`records/changes`, `changes/zone`, the `syncToken` of a zone) name the
///   zone's incarnation, a version and the zone's compaction horizon when issued (`r3`; the
///   older `r2` form has no horizon and is held to the zone's), bound to the database *and*
///   the zone.
/// - Database tokens (`changes/database`) and meta tokens (`zones/changes`) name a version,
///   bound to the database.
/// - Notification tokens (`notifications/changes`) name a sequence number, bound to the user
///   in the container environment.
///
/// The wire form is base64url (no padding) of `"<kind>2:<key>:<numbers>:<tag>:"` followed by
/// the first 16 bytes of an HMAC-SHA256, with the server's secret, of the feed's identity and
/// that text. `tag` is a short hash of the identity alone, so a token of another feed is told
/// apart from an altered one in the error; `key` is a short hash of the secret, so a token
/// signed with a secret the server no longer has is told apart too. A client cannot make a
/// position up, nor carry a token to another database, zone or user: the server only reads
/// positions it signed for that feed.
///
/// Tokens of the unsigned format of earlier releases (`r1:`, `d1:`, `m1:`, `n1:`), and tokens
/// signed with a replaced secret (an operator deletes the secret after restoring a backup),
/// answer CHANGE_TOKEN_EXPIRED, so clients that hold one fetch again from scratch once.
public struct ChangeTokens: Sendable {
    /// The length of a server secret, in bytes.
    public static let secretByteCount = 32
    /// How many bytes of the HMAC a token carries (128 bits).
    static let macByteCount = 16
    /// Longer text is no token of ours; it is refused before it is decoded.
    static let maximumTokenLength = 512

    let secret: [UInt8]
    /// Names the secret in tokens: 4 bytes of a hash of it, as hex.
    let keyID: String

    /// Tokens signed with `secret` (``secretByteCount`` random bytes, kept by the engine).
    public init(secret: [UInt8]) {
        self.secret = secret
        self.keyID = Self.hex(SHA256.hash(data: Array("nimbus change token key".utf8) + secret).prefix(4))
    }

    /// A new secret from `generator`.
    public static func newSecret(using generator: inout some RandomNumberGenerator) -> [UInt8] {
        (0..<secretByteCount).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    // MARK: Issuing

    /// The token for a zone's record feed at `version`, read from the zone in `state`.
    ///
    /// The token also carries the zone's horizon as the page was read (its *floor*): the
    /// reader has been served everything since with the tombstones up to that horizon
    /// already gone, so a later read from it is sound until a compaction raises the horizon
    /// again (``FeedRules/checkRecordToken(_:zone:databaseVersion:in:)``). Without it, a
    /// first sync of a zone whose old tombstones were compacted expired at its second page.
    public func records(zone: String, state: ZoneState, version: Int64, in database: DatabaseKey) -> String {
        records(zone: zone, incarnation: state.incarnation, version: version, floor: state.horizon, in: database)
    }

    /// The token for a zone's record feed at a position given number by number.
    public func records(zone: String, incarnation: Int64, version: Int64, floor: Int64, in database: DatabaseKey) -> String {
        seal(.recordsWithFloor, [incarnation, version, floor], for: .zone(zone, in: database))
    }

    /// The token of a zone's record feed before the database was ever written (the default
    /// zone's empty feed).
    public func recordsOfUnwrittenDatabase(zone: String, in database: DatabaseKey) -> String {
        seal(.recordsWithFloor, [0, 0, 0], for: .zone(zone, in: database))
    }

    /// The token for a database's zone feed (`changes/database`).
    public func database(version: Int64, in database: DatabaseKey) -> String {
        seal(.database, [version], for: .database(database))
    }

    /// The token for `zones/changes`.
    public func meta(version: Int64, in database: DatabaseKey) -> String {
        seal(.meta, [version], for: .database(database))
    }

    /// The token for a user's notification collection (`notifications/changes`).
    public func notifications(sequence: Int64, for recipient: NotificationRecipient) -> String {
        seal(.notifications, [sequence], for: .recipient(recipient))
    }

    // MARK: Reading

    /// The zone incarnation and version of a record token issued for `zone` of `database`.
    /// - Throws: BAD_REQUEST for text that is not such a token (malformed, altered, of
    ///   another feed, database or zone); CHANGE_TOKEN_EXPIRED for a token of an earlier
    ///   release's format.
    public func decodeRecords(_ token: String, zone: String, in database: DatabaseKey) throws(CloudKitError)
        -> RecordFeedPosition
    {
        let zoneID = ZoneID(zoneName: zone, ownerRecordName: database.owner)
        let numbers = try open(token, kinds: [.records, .recordsWithFloor], for: .zone(zone, in: database), zoneID: zoneID)
        // A token of the two-number form names no floor: it is held to the zone's horizon.
        return RecordFeedPosition(incarnation: numbers[0], version: numbers[1], floor: numbers.count > 2 ? numbers[2] : 0)
    }

    /// The version of a database token (`changes/database`) issued for `database`.
    public func decodeDatabase(_ token: String, in database: DatabaseKey) throws(CloudKitError) -> Int64 {
        try open(token, kinds: [.database], for: .database(database), zoneID: nil)[0]
    }

    /// The version of a meta token (`zones/changes`) issued for `database`. Database tokens
    /// are accepted too: both feeds count in the database's versions.
    public func decodeMeta(_ token: String, in database: DatabaseKey) throws(CloudKitError) -> Int64 {
        try open(token, kinds: [.meta, .database], for: .database(database), zoneID: nil)[0]
    }

    /// The sequence number of a notification collection token issued for `recipient`.
    public func decodeNotifications(_ token: String, for recipient: NotificationRecipient) throws(CloudKitError)
        -> Int64
    {
        try open(token, kinds: [.notifications], for: .recipient(recipient), zoneID: nil)[0]
    }

    // MARK: The format

    enum Kind: String, CaseIterable {
        case records = "r2"
        /// A record token that also carries the zone's horizon when it was issued.
        case recordsWithFloor = "r3"
        case database = "d2"
        case meta = "m2"
        case notifications = "n2"

        /// How many numbers the kind's position has.
        var count: Int {
            switch self {
            case .records: 2
            case .recordsWithFloor: 3
            default: 1
            }
        }

        /// The feed whose token the kind is, for errors.
        var feed: String {
            switch self {
            case .records, .recordsWithFloor: return "a zone's record feed (records/changes, changes/zone)"
            case .database: return "changes/database"
            case .meta: return "zones/changes"
            case .notifications: return "notifications/changes"
            }
        }
    }

    /// What a token is bound to: its bytes go into the HMAC, its hash into the tag.
    struct Identity {
        var bytes: [UInt8]

        /// Each part length-prefixed, so no two different identities have the same bytes.
        init(_ parts: [String]) {
            bytes = []
            for part in parts {
                let utf8 = Array(part.utf8)
                withUnsafeBytes(of: UInt32(truncatingIfNeeded: utf8.count).bigEndian) { bytes.append(contentsOf: $0) }
                bytes.append(contentsOf: utf8)
            }
        }

        static func zone(_ zone: String, in database: DatabaseKey) -> Identity {
            Identity(["zone", database.container, database.environment.rawValue, database.scope.rawValue, database.owner, zone])
        }

        static func database(_ database: DatabaseKey) -> Identity {
            Identity(["database", database.container, database.environment.rawValue, database.scope.rawValue, database.owner])
        }

        static func recipient(_ recipient: NotificationRecipient) -> Identity {
            Identity(["notifications", recipient.container, recipient.environment.rawValue, recipient.userRecordName])
        }

        /// 4 bytes of the identity's SHA-256, as hex.
        var tag: String { ChangeTokens.hex(SHA256.hash(data: bytes).prefix(4)) }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    func seal(_ kind: Kind, _ numbers: [Int64], for identity: Identity) -> String {
        let text = ([kind.rawValue, keyID] + numbers.map(String.init) + [identity.tag, ""]).joined(separator: ":")
        let textBytes = Array(text.utf8)
        return Base64URL.encode(textBytes + mac(textBytes, identity))
    }

    func mac(_ text: [UInt8], _ identity: Identity) -> [UInt8] {
        let code = HMAC<SHA256>.authenticationCode(for: identity.bytes + text, using: SymmetricKey(data: secret))
        return Array(Data(code).prefix(Self.macByteCount))
    }

    private func open(_ token: String, kinds: Set<Kind>, for identity: Identity, zoneID: ZoneID?)
        throws(CloudKitError) -> [Int64]
    {
        let notOurs = CloudKitError.badRequest(
            "the sync token '\(Self.excerpt(token))' is not a token this server issued; pass a token exactly as a "
                + "response returned it, or fetch without one")
        guard token.utf8.count <= Self.maximumTokenLength, let bytes = Base64URL.decode(token) else { throw notOurs }
        if Self.isEarlierFormat(bytes) {
            throw CloudKitError(
                .changeTokenExpired,
                "this sync token was issued by an earlier release of the server, before tokens were bound to their "
                    + "database; fetch again without a sync token",
                zoneID: zoneID)
        }
        guard bytes.count > Self.macByteCount,
            let text = String(bytes: bytes.dropLast(Self.macByteCount), encoding: .utf8)
        else { throw notOurs }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard let first = parts.first, let kind = Kind(rawValue: String(first)), parts.count == kind.count + 4,
            parts[parts.count - 1].isEmpty
        else { throw notOurs }
        guard kinds.contains(kind) else {
            throw .badRequest(
                "the sync token is a token of \(kind.feed), not of \(kinds.map(\.feed).sorted().joined(separator: " or ")); "
                    + "pass the token this feed returned")
        }
        var numbers: [Int64] = []
        for part in parts[2...kind.count + 1] {
            guard part.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let number = Int64(part)
            else { throw notOurs }
            numbers.append(number)
        }
        try checkSeal(bytes, key: parts[1], tag: parts[kind.count + 2], for: identity, zoneID: zoneID)
        return numbers
    }

    /// Checks that a token's bytes were signed by this server for `identity`: its identity
    /// tag (another feed's: BAD_REQUEST), its key ID (a replaced secret: CHANGE_TOKEN_EXPIRED)
    /// and its HMAC (altered: BAD_REQUEST), in that order.
    func checkSeal(_ bytes: [UInt8], key: Substring, tag: Substring, for identity: Identity, zoneID: ZoneID?)
        throws(CloudKitError)
    {
        guard tag == identity.tag else {
            throw .badRequest(
                zoneID == nil
                    ? "the sync token belongs to another database or user; pass the token this database returned, "
                        + "or fetch without one"
                    : "the sync token belongs to another zone or database; pass the token this zone returned, "
                        + "or fetch without one")
        }
        guard key == keyID else {
            throw CloudKitError(
                .changeTokenExpired,
                "this sync token was signed with a server secret this server no longer has (it was replaced, as after "
                    + "a restore from a backup); fetch again without a sync token",
                zoneID: zoneID)
        }
        let expected = mac(Array(bytes.dropLast(Self.macByteCount)), identity)
        guard Self.constantTimeEqual(expected, Array(bytes.suffix(Self.macByteCount))) else {
            throw .badRequest(
                "the sync token was altered (its signature does not match); pass a token exactly as a response "
                    + "returned it, or fetch without one")
        }
    }

    /// Whether the bytes are a token of the unsigned format (`r1:…`, `d1:…`, `m1:…`, `n1:…`).
    static func isEarlierFormat(_ bytes: [UInt8]) -> Bool {
        guard let text = String(bytes: bytes, encoding: .utf8) else { return false }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard let kind = parts.first, ["r1", "d1", "m1", "n1"].contains(kind),
            parts.count == (kind == "r1" ? 3 : 2)
        else { return false }
        return parts.dropFirst().allSatisfy { Int64($0).map { $0 >= 0 } ?? false }
    }

    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }

    /// The start of a token for an error message: a garbage token can be long.
    static func excerpt(_ token: String) -> String {
        token.count <= 96 ? token : String(token.prefix(96)) + "…"
    }
}

/// base64url without padding (RFC 4648 §5): the alphabet of opaque tokens and markers.
package enum Base64URL {
    package static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of base64url text (padding optional), or `nil` for text that is not base64url.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        guard text.utf8.allSatisfy(isAlphabet) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64.append("=") }
        return Data(base64Encoded: base64).map(Array.init)
    }

    private static func isAlphabet(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "=")
    }
}

/// Where a record token (`records/changes`) points in its zone's feed.
public struct RecordFeedPosition: Sendable, Hashable {
    /// The zone's incarnation the token was issued for.
    public var incarnation: Int64
    /// The database version the reader has been served up to.
    public var version: Int64
    /// The zone's horizon when the token was issued: tombstones up to it were already gone
    /// from everything the reader was served (0 for tokens of the older, two-number form).
    public var floor: Int64

    public init(incarnation: Int64, version: Int64, floor: Int64 = 0) {
        self.incarnation = incarnation
        self.version = version
        self.floor = floor
    }
}
