import Foundation
import Nimbus
import NimbusProtocol

extension SyncEngine {
    /// One drain of the outbox: what is settled, and how often each change had to be sent again.
    private struct Drain {
        var batchLimit: Int
        /// Changes reported as failed: left in the outbox, not sent again in this drain.
        var settled = Set<LocalRecordID>()
        /// Sends of a change that came back to be sent again (a newer version on the server,
        /// a retryable error of its own).
        var attempts: [LocalRecordID: Int] = [:]
        /// The longest wait a retryable error of a change asked for, before the next pass.
        var wait: Duration?
    }

    /// Sends the outbox in batches within the server's limits until it is empty or only
    /// changes reported as failed remain. Conflicts are merged and sent again; nothing is
    /// dropped on a retryable error.
    ///
    /// The outbox is read in passes, in send order from an indexed position, so each pass
    /// reads each entry once whatever the outbox's size. A pass that sent nothing ends the
    /// drain; a change that had to be sent again ``SyncConfiguration/retryPolicy``'s
    /// `maxAttempts` times is reported as failed instead of looping.
    func sendOutbox() async throws {
        var drain = Drain(batchLimit: max(1, min(configuration.batchSize, 200)))
        while try await sendPass(&drain) {
            if let wait = drain.wait {
                drain.wait = nil
                try await clock.sleep(wait)
            }
        }
    }

    /// One pass over the outbox; returns whether it sent (or settled) anything.
    private func sendPass(_ drain: inout Drain) async throws -> Bool {
        var position: StoreTransaction.OutboxPosition?
        var progressed = false
        while true {
            let (after, limit) = (position, drain.batchLimit)
            let page = try await store.reading { try $0.outboxPage(after: after, limit: limit) }
            guard let first = page.first else { return progressed }
            // One zone per request, within the byte budget.
            var batch: [PendingChange] = []
            var bytes = 0
            var end = first.1
            for (index, (change, at)) in page.enumerated() where change.zoneName == first.0.zoneName {
                let size = change.fields.jsonText.utf8.count + 200
                if index > 0 && bytes + size > configuration.batchBytes { break }
                end = at
                bytes += size
                if !drain.settled.contains(LocalRecordID(zoneName: change.zoneName, recordName: change.recordName)) {
                    batch.append(change)
                }
            }
            guard !batch.isEmpty else {
                position = end
                continue
            }
            do {
                try await send(batch, zone: first.0.zoneName, drain: &drain)
                position = end
                progressed = true
            } catch let error as NimbusError where error.code == .limitExceeded && batch.count > 1 {
                drain.batchLimit = max(1, batch.count / 2)  // the same position, in smaller batches
            } catch let error as NimbusError where error.code == .zoneNotFound {
                try await recoverLostZone(first.0.zoneName)
                progressed = true
            } catch let error as NimbusError where refusedRecord(error, in: batch) != nil {
                // The whole request refused for one record of it: that record is given up, the
                // rest go again from the same position.
                try await setAsideRefused(refusedRecord(error, in: batch)!, zone: first.0.zoneName, error: error)
                progressed = true
            } catch {
                // The request failed (after its retries): the batch stays, each entry with the error.
                await recordSendFailure(batch, zone: first.0.zoneName, error: error)
                throw error
            }
        }
    }

    private func send(_ batch: [PendingChange], zone: String, drain: inout Drain) async throws {
        // Build the SDK records from the server copy each change is based on.
        let outgoing = try await store.reading { transaction in
            try batch.map { change in
                try SyncPlanner.outgoing(change, copy: try transaction.serverCopy(zone: zone, name: change.recordName))
            }
        }
        var saves: [Nimbus.Record] = []
        var deletes: [Nimbus.Record.ID: String] = [:]
        var nothing: [PendingChange] = []
        for (change, item) in zip(batch, outgoing) {
            switch item {
            case .save(var record):
                // Fields encrypted on the server stay encrypted; the configuration names new ones.
                record.encryptedKeys.formUnion(configuration.encryptedFields[record.recordType] ?? [])
                saves.append(record)
            case .delete(let id, let tag): deletes[id] = tag
            case .nothing: nothing.append(change)
            }
        }
        // Asset files first: a save goes out only with its uploads' receipts.
        let assets = try await uploadingAssets(saves, zone: zone)
        saves = assets.records
        let results: (saveResults: [Nimbus.Record.ID: Result<Nimbus.Record, NimbusError>], deleteResults: [Nimbus.Record.ID: Result<Void, NimbusError>])
        if saves.isEmpty && deletes.isEmpty {
            results = ([:], [:])
        } else {
            countRequest()
            let (toSave, toDelete) = (saves, deletes)
            results = try await retrying { try await self.service.modify(saving: toSave, deleting: toDelete) }
        }
        let sent = Dictionary(uniqueKeysWithValues: batch.map { ($0.recordName, $0.revision) })
        let rules = configuration
        let unsent = nothing
        let receipts = assets.withReceipts
        let (sentAt, assetFailures) = (clock.now(), assets.failures)
        let settled = try await store.transaction { transaction in
            var settled = SentBatch(at: sentAt)
            // Uploads that failed for good: their changes are given up or wait, like a refused save.
            for failure in assetFailures {
                try settled.record(
                    SyncPlanner.failed(failure.error, state: try transaction.localState(zone: zone, name: failure.recordName)),
                    name: failure.recordName, zone: zone, transaction)
            }
            // Deletes of records that never reached the server: nothing was sent.
            for change in unsent {
                let state = try transaction.localState(zone: zone, name: change.recordName)
                guard state.pending?.revision == change.revision else { continue }
                _ = try transaction.apply([.removeOutbox], zone: zone, name: change.recordName)
            }
            for (id, answer) in results.saveResults {
                let name = id.recordName
                guard let revision = sent[name] else { continue }
                let recordType = (try? answer.get())?.recordType ?? answer.serverRecord?.recordType ?? ""
                let decision = SyncPlanner.saveAnswered(
                    answer, sent: revision, state: try transaction.localState(zone: zone, name: name),
                    rules: rules.rules(for: recordType), carriedReceipts: receipts.contains(name))
                try settled.record(decision, name: name, zone: zone, transaction)
            }
            for (id, answer) in results.deleteResults {
                let name = id.recordName
                guard let revision = sent[name] else { continue }
                let decision = SyncPlanner.deleteAnswered(
                    answer, sent: revision, state: try transaction.localState(zone: zone, name: name))
                try settled.record(decision, name: name, zone: zone, transaction)
            }
            return settled
        }
        var failures = settled.failures
        if !assets.uploaded.isEmpty { try await adoptUploads(assets.uploaded, saved: settled.saved) }
        for (name, error) in settled.again {
            let id = LocalRecordID(zoneName: zone, recordName: name)
            drain.attempts[id, default: 0] += 1
            if drain.attempts[id]! >= configuration.retryPolicy.maxAttempts {
                failures.append(SyncEvent.SendFailure(zone: zone, recordName: name, error: error))
            } else if error.isRetryable {
                let delay = configuration.retryPolicy.delay(afterFailure: drain.attempts[id]!, error: error, random: clock.random())
                drain.wait = max(drain.wait ?? .zero, delay)
                noteRetry(after: error, delay: delay)
            }
        }
        for failure in failures { drain.settled.insert(LocalRecordID(zoneName: zone, recordName: failure.recordName)) }
        try await recordSent(zone: zone, again: settled.again.map(\.0), retryingIn: drain.wait)
        for conflict in settled.conflicts { emit(.conflictResolved(conflict)) }
        if !settled.restored.isEmpty || !settled.removed.isEmpty {
            emit(.fetched(zone: zone, saved: settled.restored, deleted: settled.removed))
        }
        if !settled.saved.isEmpty || !settled.deleted.isEmpty || !failures.isEmpty {
            emit(.sent(saved: settled.saved, deleted: settled.deleted, failed: failures))
        }
        if settled.zoneLost { try await recoverLostZone(zone) }
    }

    /// A send found its zone gone: recover the copies, then read the zone from the start so
    /// the device holds a token of the zone as it is now (a later deletion of it is then
    /// detected, not mistaken for ordinary changes).
    private func recoverLostZone(_ zone: String) async throws {
        try await handleZoneLoss(zone)
        try await fetchZone(zone)
    }
}

extension Result where Failure == NimbusError {
    /// The server's record a conflict error carries.
    fileprivate var serverRecord: Nimbus.Record? {
        if case .failure(let error) = self { return error.serverRecord }
        return nil
    }
}

/// What a batch's answers did, for the events and the drain.
private struct SentBatch: Sendable {
    /// When the batch's answers came (for the entries' attempts).
    var at: Date
    var saved: [String] = []
    var deleted: [String] = []
    var failures: [SyncEvent.SendFailure] = []
    var conflicts: [ConflictRecord] = []
    /// Records the server's newer version replaced a delete of (the app sees them again).
    var restored: [LocalRecord] = []
    /// Records the app saw that are gone again (a creation the server refused for good).
    var removed: [String] = []
    /// Changes to send again, with the error that sent them back.
    var again: [(String, NimbusError)] = []
    var zoneLost = false

    mutating func record(_ decision: Decision, name: String, zone: String, _ transaction: StoreTransaction) throws {
        conflicts += try transaction.apply(decision.actions, zone: zone, name: name)
        // An entry the answer left in the outbox: one more attempt, with its error (none: sent,
        // but edited meanwhile).
        switch decision.send {
        case .saved?, .deleted?:
            if !decision.actions.contains(.removeOutbox) { try transaction.noteAttempt(zone: zone, name: name, error: nil, at: at) }
        case .sendAgain(let error)?, .retryLater(let error)?, .failed(let error)?:
            try transaction.noteAttempt(zone: zone, name: name, error: RecordedError(error), at: at)
        case .zoneLost?, nil: break
        }
        switch decision.visible {
        case .saved(let record)?: restored.append(record)
        case .deleted?: removed.append(name)
        case nil: break
        }
        switch decision.send {
        case .saved?: saved.append(name)
        case .deleted?: deleted.append(name)
        case .sendAgain(let error)?, .retryLater(let error)?: again.append((name, error))
        case .failed(let error)?: failures.append(SyncEvent.SendFailure(zone: zone, recordName: name, error: error))
        case .zoneLost?: zoneLost = true
        case nil: break
        }
    }
}
