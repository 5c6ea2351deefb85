import NimbusProtocol

/// A record zone: a named group of records with its own change feed and, in a private
/// database, atomic commits.
public struct RecordZone: Sendable, Hashable, Identifiable {
    /// A zone's identity: its name and owner (`ZoneID`).
    public typealias ID = ZoneID

    public let zoneID: ZoneID
    /// The zone's current change token, when the server listed it with one.
    public internal(set) var changeToken: ServerChangeToken?
    /// Whether modify requests in this zone can be atomic (custom zones in private databases).
    public internal(set) var supportsAtomicChanges: Bool
    /// The zone's share record (`cloudkit.zoneshare`) when the zone is shared whole, as the
    /// server lists it.
    public internal(set) var shareRecordID: Record.ID?

    public var id: ZoneID { zoneID }

    public init(zoneID: ZoneID) {
        self.zoneID = zoneID
        self.changeToken = nil
        self.supportsAtomicChanges = !zoneID.isDefault
    }

    /// A zone owned by the current user.
    public init(zoneName: String) {
        self.init(zoneID: ZoneID(zoneName: zoneName))
    }

    /// Decodes a zone dictionary `{zoneID, syncToken?, atomic?}`.
    init(wire json: JSON) throws {
        let reader = WireReader(json)
        do throws(CloudKitError) {
            self.init(zoneID: try ZoneID(wire: reader.required("zoneID")))
            changeToken = try reader.optionalString("syncToken").map(ServerChangeToken.init(rawValue:))
            supportsAtomicChanges = try reader.optionalBool("atomic") ?? supportsAtomicChanges
            if let share = try reader.optional("share") {
                shareRecordID = Record.ID(recordName: try share.required("recordName").string(), zoneID: zoneID)
            }
        } catch {
            throw NimbusError.malformedResponse(error.reason)
        }
    }
}
