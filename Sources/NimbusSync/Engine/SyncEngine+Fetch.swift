import Foundation
import GRDB
import Nimbus
import NimbusProtocol

extension SyncEngine {
    static let databaseTokenKey = "databaseToken"

    /// `changes/database` since the stored token, then `records/changes` for the configured
    /// zones that changed. Tokens are saved in the same transactions as the data they cover.
    func fetchDatabase() async throws {
        var token = try await store.pool.read { db in
            try LocalStore.state(db, Self.databaseTokenKey).flatMap(LocalStore.decodeToken)
        }
        let configured = Set(configuration.zones)
        var changed: [String] = []
        var lost: [String] = []
        while true {
            let changes: DatabaseChanges
            do {
                let since = token
                changes = try await retrying { try await self.service.databaseChanges(since: since) }
            } catch let error as NimbusError where error.code == .changeTokenExpired {
                // Start over: every configured zone is looked at again.
                token = nil
                changed = configuration.zones
                continue
            }
            for zoneID in changes.modifiedZoneIDs where configured.contains(zoneID.zoneName) {
                if !changed.contains(zoneID.zoneName) { changed.append(zoneID.zoneName) }
            }
            for zoneID in changes.deletedZoneIDs + changes.purgedZoneIDs where configured.contains(zoneID.zoneName) {
                lost.append(zoneID.zoneName)
                changed.removeAll { $0 == zoneID.zoneName }
            }
            token = changes.changeToken
            if !changes.moreComing { break }
        }
        for zone in lost {
            try await handleZoneLoss(zone)
            // Another device may already have created it again.
            try await fetchZone(zone)
        }
        for zone in changed { try await fetchZone(zone) }
        let finalToken = token
        try await store.pool.write { db in
            try LocalStore.setState(db, Self.databaseTokenKey, finalToken.flatMap(LocalStore.encodeToken))
        }
        emit(.stateSaved)
    }

    /// Fetches one zone's changes since its token and applies them page by page. An expired
    /// token makes it refetch from no token and reconcile: local copies the server no longer
    /// has (and that have no pending change) are removed.
    func fetchZone(_ zone: String, reconcile forceReconcile: Bool = false) async throws {
        var token = forceReconcile ? nil : try await store.pool.read { db in try LocalStore.zoneToken(db, zone) }
        var reconciling = forceReconcile
        var recoveredZone = false
        var seen = Set<String>()
        // The next page is requested while this one is applied (its token is known before).
        var prefetched: Task<RecordZoneChanges, any Error>?
        defer { prefetched?.cancel() }
        while true {
            let page: RecordZoneChanges
            do {
                if let next = prefetched {
                    prefetched = nil
                    page = try await next.value
                } else {
                    let since = token
                    page = try await retrying { try await self.service.zoneChanges(zone, since: since) }
                }
            } catch let error as NimbusError where error.code == .changeTokenExpired {
                token = nil
                reconciling = true
                seen = []
                continue
            } catch let error as NimbusError where error.code == .zoneNotFound && !recoveredZone {
                // Gone, or deleted and created again by another device: recover our copies,
                // then read whatever the zone holds now from the start.
                try await handleZoneLoss(zone)
                recoveredZone = true
                token = nil
                seen = []
                continue
            }
            if page.moreComing {
                let since = page.changeToken
                prefetched = Task { try await self.retrying { try await self.service.zoneChanges(zone, since: since) } }
            }
            seen.formUnion(page.modifications.map(\.id.recordName))
            seen.formUnion(page.deletions.map(\.recordID.recordName))
            try await apply(page, zone: zone)
            token = page.changeToken
            if !page.moreComing { break }
        }
        if reconciling {
            try await reconcile(zone: zone, keeping: seen)
        } else {
            // Copies this device learned from its own sends must have come back in the feed;
            // one that did not was created and deleted since the token (the feed leaves
            // those out), so it is gone from the server.
            try await reconcile(zone: zone, keeping: seen, onlyUnconfirmed: true)
        }
    }

    private func apply(_ page: RecordZoneChanges, zone: String) async throws {
        let rules = configuration
        let (saved, deleted, conflicts) = try await store.pool.write { db in
            var saved: [LocalRecord] = []
            var deleted: [String] = []
            var conflicts: [ConflictRecord] = []
            // Most pages meet an empty outbox: then no record needs its own outbox lookup.
            let zoneHasPending =
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM nimbus_outbox WHERE zone = ?)", arguments: [zone]) ?? true
            for record in page.modifications {
                let name = record.id.recordName
                let copy = try LocalStore.serverCopy(db, zone: zone, name: name)
                if let copy, copy.tag == record.recordChangeTag {
                    // Our own change coming back: not a remote edit.
                    try LocalStore.confirm(db, zone: zone, name: name)
                    continue
                }
                let pending = zoneHasPending ? try LocalStore.outboxEntry(db, zone: zone, name: name) : nil
                let serverFields = record.fieldDictionary
                switch pending?.kind {
                case .save?:
                    let (merged, stillPending, conflict) = try LocalStore.rebase(
                        db, pending: pending!, onto: record, previousCopy: copy,
                        rules: rules.rules(for: record.recordType), fromFeed: true)
                    if let conflict { conflicts.append(conflict) }
                    saved.append(
                        LocalRecord(
                            zoneName: zone, recordName: name, recordType: record.recordType, fields: merged,
                            serverChangeTag: record.recordChangeTag, isPending: stillPending))
                case .delete?:
                    try LocalStore.putServerCopy(db, record, fromFeed: true)
                    // The record changed on the server after the version the user deleted
                    // (or was created elsewhere under the same name): the newer edit wins.
                    try LocalStore.removeOutbox(db, zone: zone, name: name)
                    let resolution = FieldResolution(
                        field: "(record)", winner: .server, lostValue: "deleted", policy: "edit beats a stale delete")
                    conflicts.append(try LocalStore.logConflict(db, zone: zone, name: name, resolutions: [resolution]))
                    saved.append(
                        LocalRecord(
                            zoneName: zone, recordName: name, recordType: record.recordType, fields: serverFields,
                            serverChangeTag: record.recordChangeTag))
                case nil:
                    try LocalStore.putServerCopy(db, record, fromFeed: true)
                    saved.append(
                        LocalRecord(
                            zoneName: zone, recordName: name, recordType: record.recordType, fields: serverFields,
                            serverChangeTag: record.recordChangeTag))
                }
            }
            for deletion in page.deletions {
                let name = deletion.recordID.recordName
                let copy = try LocalStore.serverCopy(db, zone: zone, name: name)
                try LocalStore.removeServerCopy(db, zone: zone, name: name)
                if let pending = try LocalStore.outboxEntry(db, zone: zone, name: name), pending.kind == .save {
                    // Deleted on the server while edited here: the edit wins and re-creates it.
                    try Outbox.rewrite(db, zone: zone, name: name, fields: pending.fields, changedKeys: Set(pending.fields.keys))
                    continue
                }
                try LocalStore.removeOutbox(db, zone: zone, name: name)
                if copy != nil { deleted.append(name) }
            }
            try LocalStore.setZoneToken(db, zone, page.changeToken)
            return (saved, deleted, conflicts)
        }
        for conflict in conflicts { emit(.conflictResolved(conflict)) }
        if !saved.isEmpty || !deleted.isEmpty { emit(.fetched(zone: zone, saved: saved, deleted: deleted)) }
    }

    private func reconcile(zone: String, keeping seen: Set<String>, onlyUnconfirmed: Bool = false) async throws {
        let removed = try await store.pool.write { db in
            let local =
                onlyUnconfirmed
                ? try LocalStore.unconfirmed(db, zone: zone)
                : try String.fetchAll(db, sql: "SELECT name FROM nimbus_records WHERE zone = ?", arguments: [zone])
            var removed: [String] = []
            for name in local where !seen.contains(name) {
                try LocalStore.removeServerCopy(db, zone: zone, name: name)
                if let pending = try LocalStore.outboxEntry(db, zone: zone, name: name) {
                    if pending.kind == .save {
                        // Not on the server any more, but edited here: re-create it.
                        try Outbox.rewrite(
                            db, zone: zone, name: name, fields: pending.fields, changedKeys: Set(pending.fields.keys))
                        continue
                    }
                    try LocalStore.removeOutbox(db, zone: zone, name: name)
                }
                removed.append(name)
            }
            return removed
        }
        if !removed.isEmpty { emit(.fetched(zone: zone, saved: [], deleted: removed)) }
    }

    /// A zone is gone from the server (deleted, or the server was wiped).
    func handleZoneLoss(_ zone: String) async throws {
        switch configuration.zoneLossPolicy {
        case .recreateAndReupload:
            try await store.pool.write { db in
                let copies = try Row.fetchAll(
                    db, sql: "SELECT name, type, fields FROM nimbus_records WHERE zone = ?", arguments: [zone])
                let outbox = Outbox(db: db)
                for row in copies {
                    let name: String = row["name"]
                    let pending = try LocalStore.outboxEntry(db, zone: zone, name: name)
                    try LocalStore.removeServerCopy(db, zone: zone, name: name)
                    if pending?.kind == .delete {
                        try LocalStore.removeOutbox(db, zone: zone, name: name)
                    } else if let pending {
                        try Outbox.rewrite(
                            db, zone: zone, name: name, fields: pending.fields, changedKeys: Set(pending.fields.keys))
                    } else {
                        try outbox.save(
                            LocalRecord(
                                zoneName: zone, recordName: name, recordType: row["type"],
                                fields: try [String: FieldValue](jsonText: row["fields"])))
                    }
                }
                // Deletes of records the server no longer has are moot.
                try db.execute(sql: "DELETE FROM nimbus_outbox WHERE zone = ? AND kind = 'delete'", arguments: [zone])
                try LocalStore.setZoneToken(db, zone, nil)
            }
            try await retrying { try await self.service.createZones([zone]) }
            emit(.zoneRecreated(zone: zone))
            // Upload after this fetch releases the lock.
            Task { try? await self.sendChanges() }
        case .discardLocal:
            let names = try await store.pool.write { db in
                let names = try String.fetchAll(
                    db, sql: "SELECT name FROM nimbus_records WHERE zone = ?", arguments: [zone])
                try db.execute(sql: "DELETE FROM nimbus_records WHERE zone = ?", arguments: [zone])
                try db.execute(sql: "DELETE FROM nimbus_outbox WHERE zone = ?", arguments: [zone])
                try LocalStore.setZoneToken(db, zone, nil)
                return names
            }
            if !names.isEmpty { emit(.fetched(zone: zone, saved: [], deleted: names)) }
        }
    }
}
