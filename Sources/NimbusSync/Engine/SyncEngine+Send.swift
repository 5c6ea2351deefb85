import Foundation
import GRDB
import Nimbus
import NimbusProtocol

extension SyncEngine {
    private struct Key: Hashable {
        var zone: String
        var name: String
    }

    /// Sends the outbox in batches within the server's limits until it is empty or only
    /// permanently failing entries remain. Conflicts are merged and sent again; nothing is
    /// dropped on a retryable error.
    func sendOutbox() async throws {
        var batchLimit = max(1, min(configuration.batchSize, 200))
        var skipped = Set<Key>()
        var rounds = 0
        while rounds < 1_000 {
            rounds += 1
            let all = try await store.pool.read { db in try Outbox.pending(db, limit: .max) }
            let pending = all.filter { !skipped.contains(Key(zone: $0.zoneName, name: $0.recordName)) }
            guard let first = pending.first else { return }
            var batch: [PendingChange] = []
            var bytes = 0
            for change in pending where change.zoneName == first.zoneName {
                let size = change.fields.jsonText.utf8.count + 200
                if !batch.isEmpty && (batch.count >= batchLimit || bytes + size > configuration.batchBytes) { break }
                batch.append(change)
                bytes += size
            }
            do {
                try await send(batch, zone: first.zoneName, skipped: &skipped)
            } catch let error as NimbusError where error.code == .limitExceeded && batch.count > 1 {
                batchLimit = max(1, batch.count / 2)
            } catch let error as NimbusError where error.code == .zoneNotFound {
                try await recoverLostZone(first.zoneName)
            }
        }
    }

    private func send(_ batch: [PendingChange], zone: String, skipped: inout Set<Key>) async throws {
        let zoneID = ZoneID(zoneName: zone)
        // Build the SDK records from the server copy each change is based on.
        let (saves, deletes, moot) = try await store.pool.read { db in
            var saves: [Nimbus.Record] = []
            var deletes: [Nimbus.Record.ID: String] = [:]
            var moot: [PendingChange] = []
            for change in batch {
                let id = Nimbus.Record.ID(recordName: change.recordName, zoneID: zoneID)
                let copy = try LocalStore.serverCopy(db, zone: zone, name: change.recordName)
                switch change.kind {
                case .delete:
                    // Locked to the version the user deleted; a delete of a record that never
                    // reached the server has nothing to send.
                    if copy != nil, let base = change.baseChangeTag { deletes[id] = base } else { moot.append(change) }
                case .save:
                    var record: Nimbus.Record
                    if let copy {
                        record = try Nimbus.Record(systemFieldsData: copy.system)
                        for (key, value) in copy.fields { record.setFieldValue(value, forKey: key) }
                        record.clearChangedKeys()
                        for key in change.changedKeys { record.setFieldValue(change.fields[key], forKey: key) }
                    } else {
                        record = Nimbus.Record(recordType: change.recordType, recordID: id)
                        for (key, value) in change.fields { record.setFieldValue(value, forKey: key) }
                    }
                    saves.append(record)
                }
            }
            return (saves, deletes, moot)
        }
        if !moot.isEmpty {
            // Deletes of records that never reached the server: nothing to send.
            try await store.pool.write { db in
                for change in moot {
                    try LocalStore.clearOutbox(db, zone: zone, name: change.recordName, revision: change.revision)
                }
            }
        }
        guard !saves.isEmpty || !deletes.isEmpty else { return }

        countRequest()
        let results = try await retrying { try await self.service.modify(saving: saves, deleting: deletes) }
        let revisions = Dictionary(uniqueKeysWithValues: batch.map { ($0.recordName, $0.revision) })
        let rules = configuration
        let (sentSaved, sentDeleted, failures, conflicts, newlySkipped, retryableDelay, zoneLost, restored) = try await store.pool.write { db in
            var retryableDelay: Duration?
            var zoneLost = false
            var restored: [LocalRecord] = []
            var sentSaved: [String] = []
            var sentDeleted: [String] = []
            var failures: [SyncEvent.SendFailure] = []
            var conflicts: [ConflictRecord] = []
            var newlySkipped: [String] = []
            for (id, result) in results.saveResults {
                let name = id.recordName
                guard let revision = revisions[name] else { continue }
                switch result {
                case .success(let saved):
                    try LocalStore.putServerCopy(db, saved, fromFeed: false)
                    try LocalStore.clearOutbox(db, zone: zone, name: name, revision: revision)
                    if let pending = try LocalStore.outboxEntry(db, zone: zone, name: name), pending.kind == .save {
                        // Edited again while in flight: what remains to send is measured from the new copy.
                        let serverFields = saved.fieldDictionary
                        let changed = Set(pending.fields.keys).union(serverFields.keys).filter {
                            pending.fields[$0] != serverFields[$0]
                        }
                        try Outbox.rewrite(db, zone: zone, name: name, fields: pending.fields, changedKeys: changed)
                    }
                    sentSaved.append(name)
                case .failure(let error):
                    switch error.code {
                    case .serverRecordChanged where error.serverRecord != nil:
                        let server = error.serverRecord!
                        guard let pending = try LocalStore.outboxEntry(db, zone: zone, name: name) else { continue }
                        let (_, _, conflict) = try LocalStore.rebase(
                            db, pending: pending, onto: server,
                            previousCopy: try LocalStore.serverCopy(db, zone: zone, name: name),
                            rules: rules.rules(for: server.recordType), fromFeed: false)
                        if let conflict { conflicts.append(conflict) }
                    case .unknownItem:
                        // Gone from the server: send it again as a new record.
                        try LocalStore.removeServerCopy(db, zone: zone, name: name)
                        if let pending = try LocalStore.outboxEntry(db, zone: zone, name: name) {
                            try Outbox.rewrite(
                                db, zone: zone, name: name, fields: pending.fields, changedKeys: Set(pending.fields.keys))
                        }
                    case .zoneNotFound:
                        zoneLost = true
                    default:
                        if error.isRetryable {
                            retryableDelay = self.delay(after: error, attempt: 1)
                        } else {
                            failures.append(SyncEvent.SendFailure(zone: zone, recordName: name, error: error))
                            newlySkipped.append(name)
                        }
                    }
                }
            }
            for (id, result) in results.deleteResults {
                let name = id.recordName
                guard let revision = revisions[name] else { continue }
                switch result {
                case .success:
                    try LocalStore.removeServerCopy(db, zone: zone, name: name)
                    try LocalStore.clearOutbox(db, zone: zone, name: name, revision: revision)
                    sentDeleted.append(name)
                case .failure(let error) where error.code == .unknownItem:
                    try LocalStore.removeServerCopy(db, zone: zone, name: name)
                    try LocalStore.clearOutbox(db, zone: zone, name: name, revision: revision)
                    sentDeleted.append(name)
                case .failure(let error) where error.code == .serverRecordChanged && error.serverRecord != nil:
                    // Changed on the server since this device saw it: the newer edit beats the
                    // delete. Keep the server's record and drop the delete.
                    let server = error.serverRecord!
                    try LocalStore.putServerCopy(db, server, fromFeed: false)
                    try LocalStore.clearOutbox(db, zone: zone, name: name, revision: revision)
                    let resolution = FieldResolution(
                        field: "(record)", winner: .server, lostValue: "deleted", policy: "edit beats a stale delete")
                    conflicts.append(try LocalStore.logConflict(db, zone: zone, name: name, resolutions: [resolution]))
                    restored.append(
                        LocalRecord(
                            zoneName: zone, recordName: name, recordType: server.recordType,
                            fields: server.fieldDictionary, serverChangeTag: server.recordChangeTag))
                case .failure(let error):
                    if error.code == .zoneNotFound {
                        zoneLost = true
                    } else if error.isRetryable {
                        retryableDelay = self.delay(after: error, attempt: 1)
                    } else {
                        failures.append(SyncEvent.SendFailure(zone: zone, recordName: name, error: error))
                        newlySkipped.append(name)
                    }
                }
            }
            return (sentSaved, sentDeleted, failures, conflicts, newlySkipped, retryableDelay, zoneLost, restored)
        }
        for name in newlySkipped { skipped.insert(Key(zone: zone, name: name)) }
        for conflict in conflicts { emit(.conflictResolved(conflict)) }
        if !restored.isEmpty { emit(.fetched(zone: zone, saved: restored, deleted: [])) }
        if !sentSaved.isEmpty || !sentDeleted.isEmpty || !failures.isEmpty {
            emit(.sent(saved: sentSaved, deleted: sentDeleted, failed: failures))
        }
        if zoneLost { try await recoverLostZone(zone) }
        if let retryableDelay { try await Task.sleep(for: retryableDelay) }
    }

    /// A send found its zone gone: recover the copies, then read the zone from the start so
    /// the device holds a token of the zone as it is now (a later deletion of it is then
    /// detected, not mistaken for ordinary changes).
    private func recoverLostZone(_ zone: String) async throws {
        try await handleZoneLoss(zone)
        try await fetchZone(zone)
    }
}
