import Foundation
import GRDB
import Nimbus
import NimbusProtocol

extension LocalStore {
    /// The shared zones (other users' zones shared with this one) the device holds, by
    /// owner and name.
    ///
    /// ```swift
    /// for zoneID in try store.sharedZoneIDs() {
    ///     let records = try store.records(inZone: zoneID.localZoneName)
    /// }
    /// ```
    public func sharedZoneIDs() throws -> [ZoneID] {
        try pool.read { db in
            try StoreTransaction(db: db, changes: ChangeTracker(), now: now).sharedZoneNames()
                .map(ZoneID.init(localZoneName:))
        }
    }

    /// The share of a zone the device holds: a zone-wide share, or the share whose root is
    /// `rootRecordName`; `nil` when the device holds none.
    ///
    /// ```swift
    /// let permission = try store.share(inZone: zone, rootRecordName: album.recordName)?
    ///     .currentUserParticipant?.permission
    /// ```
    public func share(inZone zone: String, rootRecordName: String? = nil) throws -> Share? {
        try pool.read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT name, system FROM nimbus_records WHERE zone = ? AND type = ?",
                arguments: [zone, Share.recordType])
            var shareName = Share.zoneWideShareRecordName
            if let rootRecordName {
                let rootSystem = try Data.fetchOne(
                    db, sql: "SELECT system FROM nimbus_records WHERE zone = ? AND name = ?",
                    arguments: [zone, rootRecordName])
                if let name = try rootSystem.flatMap({ try Nimbus.Record(systemFieldsData: $0).share?.recordName }) {
                    shareName = name
                }
            }
            guard let row = rows.first(where: { ($0["name"] as String) == shareName }) else { return nil }
            return Share(try Nimbus.Record(systemFieldsData: row["system"]))
        }
    }
}
