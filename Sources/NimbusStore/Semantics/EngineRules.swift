import Foundation
import Logging
import NimbusProtocol

/// The answers every engine gives alike when reading a feed: the errors for a missing zone,
/// a token of a deleted zone incarnation and a token older than a retention horizon.
///
/// Engines decide *when* these apply from their own reads; the wording and codes live here
/// once, so a client cannot tell the engines apart.
public enum FeedRules {
    /// ZONE_NOT_FOUND for a zone that does not exist (or was deleted) in the database.
    public static func zoneNotFound(_ zone: String, in database: DatabaseKey) -> CloudKitError {
        CloudKitError(
            .zoneNotFound, "zone '\(zone)' does not exist in this database",
            zoneID: ZoneID(zoneName: zone, ownerRecordName: database.owner))
    }

    /// Checks a record token (`records/changes`) against the zone it is read from.
    ///
    /// - A token of an earlier incarnation of the zone is answered as for a deleted zone
    ///   (ZONE_NOT_FOUND), so clients recover the way they do from a zone deletion (re-upload
    ///   or drop their copies) instead of merely refetching, which would silently lose what
    ///   the old zone held.
    /// - A token older than the zone's horizon (tombstones up to it were compacted) is
    ///   CHANGE_TOKEN_EXPIRED, unless it was issued with that horizon already in place (its
    ///   ``RecordFeedPosition/floor``): its reader was never served a record whose tombstone
    ///   compaction removed since, so nothing it holds can have been deleted unseen.
    /// - A token ahead of the database (a version it has not reached, or an incarnation of the
    ///   zone not created yet) is CHANGE_TOKEN_EXPIRED: the server was restored from a backup
    ///   taken before the token was issued, and the changes after the token's position are not
    ///   the ones the client saw.
    public static func checkRecordToken(
        _ position: RecordFeedPosition, zone: ZoneState, databaseVersion: Int64,
        in database: DatabaseKey
    ) throws(CloudKitError) {
        let zoneID = ZoneID(zoneName: zone.zoneName, ownerRecordName: database.owner)
        if position.incarnation > zone.incarnation || position.version > databaseVersion {
            throw tokenAhead(zoneID: zoneID)
        }
        if position.incarnation != zone.incarnation {
            throw CloudKitError(
                .zoneNotFound,
                "the zone '\(zone.zoneName)' this sync token belongs to was deleted (a zone of that name was "
                    + "created since); treat the zone as deleted, then fetch without a sync token",
                zoneID: zoneID)
        }
        if position.version < zone.horizon && position.floor < zone.horizon {
            throw CloudKitError(
                .changeTokenExpired,
                "the sync token is older than the tombstone retention window of zone '\(zone.zoneName)'; "
                    + "fetch the zone's changes again without a sync token",
                zoneID: zoneID)
        }
    }

    /// Checks a record feed read from a database never written: the default zone's feed is
    /// empty (a token of it from the start is fine, one further on is ahead of the database),
    /// any other zone does not exist.
    public static func checkUnwrittenDatabase(
        zone: String, position: RecordFeedPosition?, in database: DatabaseKey
    ) throws(CloudKitError) {
        guard zone == ZoneID.defaultZoneName else { throw zoneNotFound(zone, in: database) }
        if let position, position.incarnation != 0 || position.version != 0 {
            throw tokenAhead(zoneID: ZoneID(zoneName: zone, ownerRecordName: database.owner))
        }
    }

    /// CHANGE_TOKEN_EXPIRED for an authentic token whose position the feed has not reached:
    /// the server's data was restored from a backup taken before the token was issued.
    public static func tokenAhead(zoneID: ZoneID? = nil) -> CloudKitError {
        CloudKitError(
            .changeTokenExpired,
            "the sync token is ahead of this server's history (its data was restored from an earlier backup); "
                + "fetch again without a sync token",
            zoneID: zoneID)
    }

    /// CHANGE_TOKEN_EXPIRED for a zone feed token (`zones/changes`, `changes/database`)
    /// older than the retention window for deleted zones.
    public static let zoneTokenExpired = CloudKitError(
        .changeTokenExpired,
        "the sync token is older than the retention window for deleted zones; fetch again without a sync token")

    /// CHANGE_TOKEN_EXPIRED for a notification collection token older than compacted notifications.
    public static let notificationTokenExpired = CloudKitError(
        .changeTokenExpired,
        "the notification token is older than the notification retention window; fetch the collection "
            + "again without a token")
}

/// The answers of `tokens/register` for a token it cannot register, alike on every engine.
///
/// Only tokens `tokens/create` issued can be registered: a token is the credential of its
/// `webcourierURL`, so a token a client made up (guessable, or chosen to collide) must never
/// become one.
public enum PushTokenRules {
    /// BAD_REQUEST for a token this server never issued.
    public static let notIssued = CloudKitError.badRequest(
        "'apnsToken' is not a token this server issued; get one from tokens/create, then register it")

    /// ACCESS_DENIED for a token issued to someone else.
    public static let issuedToAnother = CloudKitError(
        .accessDenied, "this push token was issued to another user or container")
}

/// The two feeds of a database's zones, which engines read alike: `zones/changes` (zones
/// created or deleted, by `meta_version`) and `changes/database` (zones whose records or
/// existence changed, by `change_version`).
public enum ZoneFeed: Sendable {
    case meta
    case database

    /// The zone column the feed orders by.
    public var column: String {
        switch self {
        case .meta: return "meta_version"
        case .database: return "change_version"
        }
    }

    /// The version a token of this feed names (0 for no token).
    public func version(of token: String?, tokens: ChangeTokens, in database: DatabaseKey) throws(CloudKitError)
        -> Int64
    {
        guard let token else { return 0 }
        switch self {
        case .meta: return try tokens.decodeMeta(token, in: database)
        case .database: return try tokens.decodeDatabase(token, in: database)
        }
    }

    /// The token of this feed at a version.
    public func token(_ version: Int64, tokens: ChangeTokens, in database: DatabaseKey) -> String {
        switch self {
        case .meta: return tokens.meta(version: version, in: database)
        case .database: return tokens.database(version: version, in: database)
        }
    }

    /// The version of `zone` this feed orders by.
    public func version(of zone: ZoneState) -> Int64 {
        switch self {
        case .meta: return zone.metaVersion
        case .database: return zone.changeVersion
        }
    }
}

/// The `DELETE_SELF` references of a stored record: what the engines index so that deleting
/// a record can cascade to the records that point at it.
public enum DeleteSelfReferences {
    private static let marker = Array("DELETE_SELF".utf8)

    /// Whether the fields JSON contains `DELETE_SELF` at all: a byte search, so a write that
    /// has no such reference (the common case) never parses its fields.
    public static func mentioned(in fieldsJSON: String) -> Bool {
        FieldsText.contains(marker, in: fieldsJSON)
    }

    /// The names of the records a live record references with `DELETE_SELF`.
    public static func targets(of record: StoredRecord) throws(CloudKitError) -> Set<String> {
        guard !record.deleted, mentioned(in: record.fieldsJSON) else { return [] }
        return Set(record.fields().values.flatMap(\.references).filter { $0.action == .deleteSelf }.map(\.recordName))
    }
}

/// Unguessable random identifiers: API and web auth tokens, push tokens, user record names.
public enum RandomToken {
    /// `bytes` random bytes as lowercase hex.
    public static func hex(bytes: Int = 32) -> String {
        var generator = SystemRandomNumberGenerator()
        var text = ""
        text.reserveCapacity(bytes * 2)
        for _ in 0..<bytes {
            let byte = UInt8.random(in: 0...255, using: &generator)
            if byte < 16 { text.append("0") }
            text.append(String(byte, radix: 16))
        }
        return text
    }
}

extension SubscriptionDefinition {
    /// Parses a definition an engine stored (the JSON of ``wireJSON(zoneOwner:)``); `nil`,
    /// logged, for one that no longer parses (such as a filter value an older release stored
    /// as `null`): it is left out of lists, lookups and matching, so it never fails the
    /// reads and writes of others. The v6 repair migration deletes such subscriptions.
    public init?(storedDefinition definition: String) {
        do {
            self = try SubscriptionDefinition(wire: WireReader(try JSON.parse(definition)))
        } catch {
            StoredRecord.logger.warning("a stored subscription does not decode and is ignored: \(error) in \(definition.prefix(300))")
            return nil
        }
    }
}

extension StoredNotification {
    /// The notification a subscription match becomes, numbered `sequence` in its recipient's
    /// collection, with a fresh notification ID and Apple's payload.
    ///
    /// - Parameter unreadBadges: for a subscription with `shouldBadge`, how many unread
    ///   badging notifications the recipient has before this one (the badge is one more).
    public init(
        draft: NotificationDraft, database key: DatabaseKey, caller: Caller?, sequence: Int64, unreadBadges: Int,
        now: Int64
    ) {
        var key = key
        var draft = draft
        if SharedSubscriptionCopy.isCopy(draft, in: key) {
            draft = SharedSubscriptionCopy.participantDraft(draft)
            key.scope = .shared
        }
        let recipient = NotificationRecipient(
            container: key.container, environment: key.environment, userRecordName: draft.subscription.owner)
        let notificationID = UUID().uuidString.lowercased()
        let badges = draft.subscription.subscription.notificationInfo.shouldBadge
        let payload = PushPayload.make(
            draft, notificationID: notificationID, container: key.container, scope: key.scope,
            zoneOwner: key.owner, badge: badges ? unreadBadges + 1 : nil, traceParent: caller?.traceParent)
        self.init(
            recipient: recipient, sequence: sequence, createdSequence: sequence, notificationID: notificationID,
            subscriptionID: draft.subscription.subscription.subscriptionID, kind: draft.kind, scope: key.scope,
            zoneName: draft.zoneName, zoneOwner: draft.zoneName == nil ? nil : key.owner,
            recordName: draft.recordName, reason: draft.reason, originUser: caller?.userRecordName,
            originDevice: caller?.deviceID, payload: payload.serialized(), isRead: false, badges: badges,
            createdAt: now)
    }
}
