import Foundation
import Nimbus

extension CKSyncEngine {
    /// The outcome of a send, for the automatic sync's retry.
    struct SendOutcome: Sendable {
        /// The first retryable failure's wait, when some changes must be sent again later.
        var retryAfter: Duration?
        /// Each change that failed, by record or zone ID (a manual send throws them as a
        /// ``CKError/Code/partialFailure``, after their events).
        var failures: [CKError.PartialItemID: CKError] = [:]
    }

    /// A send: pending zone changes, then record batches from the delegate until none is left.
    @discardableResult
    func performSend(_ context: SendChangesContext) async throws -> SendOutcome {
        try requireSyncableDatabase()
        guard try await checkAccount() else { return SendOutcome() }
        let scope = context.options.scope
        var outcome = SendOutcome()
        let hasRecordWork = state.hasPendingUntrackedChanges || state.pendingRecordZoneChanges.contains { scope.contains($0) }
        let zoneWork = state.pendingDatabaseChanges.filter { scope.contains($0) }
        guard hasRecordWork || !zoneWork.isEmpty else { return outcome }

        await emit(.willSendChanges(.init(context: context)))
        try Task.checkCancellation()
        if !zoneWork.isEmpty {
            outcome.retryAfter = try await sendZoneChanges(zoneWork, failures: &outcome.failures)
        }
        var attempted: Set<CKRecord.ID> = []
        while outcome.retryAfter == nil {
            try Task.checkCancellation()
            let pending = state.pendingRecordZoneChanges.filter { scope.contains($0) }
            guard !pending.isEmpty || state.hasPendingUntrackedChanges else { break }
            guard let batch = await delegate?.nextRecordZoneChangeBatch(context, syncEngine: self),
                !batch.recordsToSave.isEmpty || !batch.recordIDsToDelete.isEmpty
            else { break }
            let ids = batch.recordsToSave.map(\.recordID) + batch.recordIDsToDelete
            // A batch of changes already sent in this send (and still pending) would repeat forever.
            guard !Set(ids).isSubset(of: attempted) else { break }
            attempted.formUnion(ids)
            outcome.retryAfter = try await sendBatch(batch, failures: &outcome.failures)
        }
        await emit(.didSendChanges(.init(context: context)))
        return outcome
    }

    /// Sends zone saves and deletions; returns the wait before a retry when some failed for
    /// a retryable reason.
    private func sendZoneChanges(
        _ changes: [PendingDatabaseChange], failures: inout [CKError.PartialItemID: CKError]
    ) async throws -> Duration? {
        var saves: [CKRecordZone] = []
        var deletes: [CKRecordZone.ID] = []
        for change in changes {
            switch change {
            case .saveZone(let zone): saves.append(zone)
            case .deleteZone(let id): deletes.append(id)
            }
        }
        var savedZones: [CKRecordZone] = []
        var failedSaves: [Event.SentDatabaseChanges.FailedZoneSave] = []
        var deletedZoneIDs: [CKRecordZone.ID] = []
        var failedDeletes: [CKRecordZone.ID: CKError] = [:]
        var sent: [PendingDatabaseChange] = []
        var retry: Duration?
        do {
            let results = try await database.modifyRecordZones(saving: saves, deleting: deletes)
            for zone in saves {
                switch results.saveResults[zone.zoneID] {
                case .success(let saved)?:
                    savedZones.append(saved)
                    sent.append(.saveZone(zone))
                case .failure(let error)?:
                    let ckError = CKError.wrapping(error)
                    failedSaves.append(.init(zone: zone, error: ckError))
                    if let wait = Self.retryWait(ckError) { retry = retry ?? wait } else { sent.append(.saveZone(zone)) }
                case nil: break
                }
            }
            for id in deletes {
                switch results.deleteResults[id] {
                case .success?:
                    deletedZoneIDs.append(id)
                    sent.append(.deleteZone(id))
                case .failure(let error)?:
                    let ckError = CKError.wrapping(error)
                    if ckError.code == .zoneNotFound {
                        deletedZoneIDs.append(id)
                        sent.append(.deleteZone(id))
                    } else {
                        failedDeletes[id] = ckError
                        if let wait = Self.retryWait(ckError) { retry = retry ?? wait } else { sent.append(.deleteZone(id)) }
                    }
                case nil: break
                }
            }
        } catch let error as CKError where error.code != .operationCancelled {
            // The request failed as a whole: every change failed with its error.
            failedSaves = saves.map { .init(zone: $0, error: error) }
            for id in deletes { failedDeletes[id] = error }
            if let wait = Self.retryWait(error) { retry = wait } else { sent = changes }
        }
        for failure in failedSaves { failures[.zone(failure.zone.zoneID)] = failure.error }
        for (id, error) in failedDeletes { failures[.zone(id)] = error }
        let removed = Set(sent.map(StoredDatabaseChange.init))
        state.data.withLock { $0.pendingDatabaseChanges.removeAll { removed.contains($0) } }
        await emit(.sentDatabaseChanges(.init(
            savedZones: savedZones, failedZoneSaves: failedSaves, deletedZoneIDs: deletedZoneIDs,
            failedZoneDeletes: failedDeletes)))
        await emitStateUpdate()
        return retry
    }

    /// Sends one batch from the delegate, in requests of at most the server's limit (per zone
    /// when the batch is atomic by zone); reports each request's results.
    private func sendBatch(
        _ batch: RecordZoneChangeBatch, failures: inout [CKError.PartialItemID: CKError]
    ) async throws -> Duration? {
        var retry: Duration?
        for (saves, deletes) in Self.requests(for: batch) {
            try Task.checkCancellation()
            var savedRecords: [CKRecord] = []
            var failedSaves: [Event.SentRecordZoneChanges.FailedRecordSave] = []
            var deletedIDs: [CKRecord.ID] = []
            var failedDeletes: [CKRecord.ID: CKError] = [:]
            var done: [PendingRecordZoneChange] = []
            do {
                let results = try await modifyRecordsCreatingNewZones(
                    saving: saves, deleting: deletes, atomically: batch.atomicByZone)
                for record in saves {
                    switch results.saveResults[record.recordID] {
                    case .success(let saved)?:
                        savedRecords.append(saved)
                        done.append(.saveRecord(record.recordID))
                    case .failure(let error)?:
                        let ckError = CKError.wrapping(error)
                        failedSaves.append(.init(record: record, error: ckError))
                        if let wait = Self.retryWait(ckError) {
                            retry = retry ?? wait
                        } else if ckError.code != .batchRequestFailed {
                            // Failed for good; one that failed only with its atomic zone's
                            // other changes stays pending, for the next send.
                            done.append(.saveRecord(record.recordID))
                        }
                    case nil: break
                    }
                }
                for id in deletes {
                    switch results.deleteResults[id] {
                    case .success?:
                        deletedIDs.append(id)
                        done.append(.deleteRecord(id))
                    case .failure(let error)?:
                        let ckError = CKError.wrapping(error)
                        if ckError.code == .unknownItem {
                            deletedIDs.append(id)
                            done.append(.deleteRecord(id))
                        } else {
                            failedDeletes[id] = ckError
                            if let wait = Self.retryWait(ckError) {
                                retry = retry ?? wait
                            } else if ckError.code != .batchRequestFailed {
                                done.append(.deleteRecord(id))
                            }
                        }
                    case nil: break
                    }
                }
            } catch let error as CKError where error.code != .operationCancelled {
                // The request failed as a whole (a missing zone, a network failure): every
                // change failed with its error, as CloudKit reports it.
                failedSaves = saves.map { .init(record: $0, error: error) }
                for id in deletes { failedDeletes[id] = error }
                if let wait = Self.retryWait(error) {
                    retry = retry ?? wait
                } else {
                    done = saves.map { .saveRecord($0.recordID) } + deletes.map { .deleteRecord($0) }
                }
            }
            for failure in failedSaves { failures[.record(failure.record.recordID)] = failure.error }
            for (id, error) in failedDeletes { failures[.record(id)] = error }
            let removed = Set(done.map(StoredRecordChange.init))
            state.data.withLock { $0.pendingRecordChanges.removeAll { removed.contains($0) } }
            await emit(.sentRecordZoneChanges(.init(
                savedRecords: savedRecords, failedRecordSaves: failedSaves, deletedRecordIDs: deletedIDs,
                failedRecordDeletes: failedDeletes)))
            await emitStateUpdate()
            if retry != nil { break }
        }
        return retry
    }

    /// The requests a batch is sent in: at most ``RecordZoneChangeBatch/maximumChanges``
    /// items each, one zone per request when the batch is atomic by zone.
    static func requests(for batch: RecordZoneChangeBatch) -> [(saves: [CKRecord], deletes: [CKRecord.ID])] {
        enum Item {
            case save(CKRecord)
            case delete(CKRecord.ID)
        }
        var items = batch.recordsToSave.map(Item.save) + batch.recordIDsToDelete.map(Item.delete)
        if batch.atomicByZone {
            func zone(_ item: Item) -> String {
                switch item {
                case .save(let record): return record.recordID.zoneID.storageKey
                case .delete(let id): return id.zoneID.storageKey
                }
            }
            var order: [String] = []
            for item in items where !order.contains(zone(item)) { order.append(zone(item)) }
            items = order.flatMap { key in items.filter { zone($0) == key } }
        }
        var requests: [(saves: [CKRecord], deletes: [CKRecord.ID])] = []
        var current: (saves: [CKRecord], deletes: [CKRecord.ID]) = ([], [])
        var currentZone: String?
        for item in items {
            let (itemZone, count) = {
                switch item {
                case .save(let record): return (record.recordID.zoneID.storageKey, current.saves.count + current.deletes.count)
                case .delete(let id): return (id.zoneID.storageKey, current.saves.count + current.deletes.count)
                }
            }()
            let zoneChanges = batch.atomicByZone && currentZone != nil && currentZone != itemZone
            if count >= RecordZoneChangeBatch.maximumChanges || zoneChanges {
                requests.append(current)
                current = ([], [])
            }
            currentZone = itemZone
            switch item {
            case .save(let record): current.saves.append(record)
            case .delete(let id): current.deletes.append(id)
            }
        }
        if !current.saves.isEmpty || !current.deletes.isEmpty { requests.append(current) }
        return requests
    }

    /// How long to wait before sending a change again that failed with `error`; `nil` when
    /// sending it again cannot help (the app must act: a conflict, a missing zone, …).
    static func retryWait(_ error: CKError) -> Duration? {
        switch error.code {
        case .networkFailure, .networkUnavailable, .serviceUnavailable, .requestRateLimited, .zoneBusy,
            .serverResponseLost:
            return .milliseconds(Int64(((error.retryAfterSeconds ?? 1) * 1000).rounded(.up)))
        default:
            return nil
        }
    }
}
