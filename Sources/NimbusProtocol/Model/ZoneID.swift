/// Identifies a record zone: its name and the user record name of the database owner.
///
/// On the wire: `{"zoneName": "...", "ownerRecordName": "..."}`. Some clients send
/// `ownerName`; both are accepted.
public struct ZoneID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The name of the zone every database has and that cannot be deleted.
    public static let defaultZoneName = "_defaultZone"

    public var zoneName: String
    public var ownerRecordName: String?

    public init(zoneName: String, ownerRecordName: String? = nil) {
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
    }

    /// The default zone.
    public static let `default` = ZoneID(zoneName: defaultZoneName)

    public var isDefault: Bool { zoneName == Self.defaultZoneName }

    public var description: String { zoneName }
}
