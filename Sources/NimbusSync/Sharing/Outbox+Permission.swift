import Foundation
import GRDB
import Nimbus
import NimbusProtocol

extension Outbox {
    /// Refuses a change in a shared zone whose shares (the `cloudkit.share` records this
    /// device fetched from it) all give the user read-only access: such a change could never
    /// be sent. The server stays the authority: a change it refuses anyway is quarantined
    /// when sent (``SyncPlanner/permissionDenied(_:state:)``), never sent again.
    func refuseReadOnly(zone: String) throws {
        guard ZoneID(localZoneName: zone).isSharedZone else { return }
        let systems = try Data.fetchAll(
            db, sql: "SELECT system FROM nimbus_records WHERE zone = ? AND type = ?",
            arguments: [zone, Share.recordType])
        let permissions = systems.compactMap { system in
            (try? Nimbus.Record(systemFieldsData: system)).flatMap(Share.init)?.currentUserParticipant?.permission
        }
        guard !permissions.isEmpty, !permissions.contains(.readWrite) else { return }
        let zoneID = ZoneID(localZoneName: zone)
        throw NimbusError(
            .permissionFailure,
            "'\(zoneID.zoneName)' is shared with you read-only by \(zoneID.ownerRecordName ?? "its owner"): "
                + "you cannot change its records", zoneID: zoneID)
    }
}
