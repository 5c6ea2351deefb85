import GRDB
import NimbusProtocol

extension LocalStore {
    /// The records of a zone as the device sees them (pending changes applied), read with a
    /// `db` the caller already holds: inside ``write(_:)``, a GRDB read, or a
    /// `ValueObservation` (which then tracks the engine's tables).
    public static func records(in db: GRDB.Database, zone: String) throws -> [LocalRecord] {
        try records(db, zone: zone)
    }

    /// One record as the device sees it, or nil if absent or pending deletion, read with a
    /// `db` the caller already holds.
    public static func record(in db: GRDB.Database, zone: String, name: String) throws -> LocalRecord? {
        try records(db, zone: zone, name: name).first
    }
}

extension Outbox {
    /// A record as the device sees it, inside the write transaction: for read-modify-write
    /// edits (a counter increment) that no fetch can slip between.
    public func record(zone: String, name: String) throws -> LocalRecord? {
        try LocalStore.records(db, zone: zone, name: name).first
    }
}
