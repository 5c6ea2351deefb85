import NimbusProtocol

/// `zones/modify` applied in order to the zones read under the database's writer or lock:
/// what each operation answers, and the final state of every zone it touched. The engine
/// then, in one transaction: deletes the records (with their references, asset references
/// and index entries) of every zone in ``emptied`` and frees their usage, writes the final
/// state of every zone in ``touched`` (with ``deletedAt``), sets the database's version to
/// ``version``, and creates the notifications of ``created`` and ``deleted``. Nothing
/// touched: nothing to write.
public struct ZoneChangeSet: Sendable {
    public var zones: [String: ZoneState]
    /// The database version after the operations so far.
    public var version: Int64
    public let now: Int64
    /// `deleted_at` of the touched zones (nil for a live one).
    public var deletedAt: [String: Int64?] = [:]
    public var created: [String] = []
    public var deleted: [String] = []
    /// Zones written, in first-touch order.
    public var touched: [String] = []
    /// Zones deleted at some point: their records go.
    public var emptied: Set<String> = []

    public init(zones: [String: ZoneState], version: Int64, now: Int64) {
        self.zones = zones
        self.version = version
        self.now = now
    }

    public mutating func apply(_ operation: ZoneOperation) -> ZoneResult {
        switch operation {
        case .create(let name):
            if let existing = zones[name], !existing.deleted {
                // Saving an existing zone succeeds and changes nothing, as in CloudKit.
                return .saved(existing)
            }
            version += 1
            let zone = ZoneState(
                zoneName: name, incarnation: version, changeVersion: version, metaVersion: version, horizon: 0,
                deleted: false)
            write(zone, deletedAt: nil)
            created.append(name)
            return .saved(zone)
        case .delete(let name):
            guard name != ZoneID.defaultZoneName else {
                return .failed(zoneName: name, error: .badRequest("the default zone cannot be deleted"))
            }
            guard var zone = zones[name], !zone.deleted else {
                return .failed(zoneName: name, error: CloudKitError(.zoneNotFound, "zone '\(name)' does not exist"))
            }
            version += 1
            zone.deleted = true
            zone.changeVersion = version
            zone.metaVersion = version
            write(zone, deletedAt: now)
            emptied.insert(name)
            deleted.append(name)
            return .deleted(zoneName: name)
        }
    }

    private mutating func write(_ zone: ZoneState, deletedAt: Int64?) {
        if !touched.contains(zone.zoneName) { touched.append(zone.zoneName) }
        zones[zone.zoneName] = zone
        self.deletedAt[zone.zoneName] = .some(deletedAt)
    }
}
