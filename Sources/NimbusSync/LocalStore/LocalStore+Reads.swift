import GRDB
import NimbusProtocol

extension LocalStore {
    /// The records of a zone as the device sees them (pending changes applied), read with a
    /// `db` the caller already holds: inside ``write(_:)`` or ``read(_:)-(Database)->T``.
    public static func records(in db: GRDB.Database, zone: String) throws -> [LocalRecord] {
        try records(db, zone: zone)
    }

    /// One record as the device sees it, or nil if absent or pending deletion, read with a
    /// `db` the caller already holds.
    public static func record(in db: GRDB.Database, zone: String, name: String) throws -> LocalRecord? {
        try records(db, zone: zone, name: name).first
    }

    /// The number of changes waiting to be sent, read with a `db` the caller already holds.
    public static func pendingCount(in db: GRDB.Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM nimbus_outbox") ?? 0
    }

    /// How many records of a zone the device holds a server copy of (a count; no record is
    /// decoded), read with a `db` the caller already holds.
    public static func serverCopyCount(in db: GRDB.Database, zone: String) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM nimbus_records WHERE zone = ?", arguments: [zone]) ?? 0
    }

    /// Whether a fetch of the zone ever completed on this device (it holds a change token for
    /// it), read with a `db` the caller already holds: `false` until the first sync is done.
    public static func hasFetched(zone: String, in db: GRDB.Database) throws -> Bool {
        try String.fetchOne(db, sql: "SELECT token FROM nimbus_zones WHERE zone = ?", arguments: [zone]) != nil
    }
}

extension Outbox {
    /// A record as the device sees it, inside the write transaction: for read-modify-write
    /// edits (a counter increment) that no fetch can slip between.
    public func record(zone: String, name: String) throws -> LocalRecord? {
        try LocalStore.records(db, zone: zone, name: name).first
    }
}
