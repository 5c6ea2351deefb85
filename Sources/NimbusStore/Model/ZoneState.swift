import NimbusProtocol

/// A record zone as the store tracks it.
public struct ZoneState: Sendable, Equatable {
    public var zoneName: String
    /// The database version at which this incarnation of the zone was created (0 for the
    /// default zone). A token minted for an earlier incarnation is expired.
    public var incarnation: Int64
    /// The version of the last change to anything in the zone (records or the zone itself).
    public var changeVersion: Int64
    /// The version at which the zone was created or deleted (for `zones/changes`).
    public var metaVersion: Int64
    /// Record tokens older than this version are expired: tombstones up to it were compacted.
    public var horizon: Int64
    public var deleted: Bool

    public init(
        zoneName: String, incarnation: Int64, changeVersion: Int64, metaVersion: Int64, horizon: Int64, deleted: Bool
    ) {
        self.zoneName = zoneName
        self.incarnation = incarnation
        self.changeVersion = changeVersion
        self.metaVersion = metaVersion
        self.horizon = horizon
        self.deleted = deleted
    }

    /// The default zone, which always exists.
    public static let defaultZone = ZoneState(
        zoneName: ZoneID.defaultZoneName, incarnation: 0, changeVersion: 0, metaVersion: 0, horizon: 0, deleted: false)
}
