import Foundation
import GRDB
import Nimbus
import NimbusProtocol

extension LocalStore {
    /// The changes the engine gave up on (``GivenUpChange``), of every account, oldest first.
    ///
    /// ```swift
    /// for change in try store.givenUp() {
    ///     print("\(change.change.recordName): \(change.reason), \(change.error?.description ?? "")")
    /// }
    /// ```
    public func givenUp() throws -> [GivenUpChange] {
        try pool.read { db in try StoreTransaction(db: db, changes: ChangeTracker(), now: now).givenUp() }
    }

    /// Puts given-up changes back into the outbox, as they were (a save's changed keys are
    /// measured again from the server copy the device has now); they go out with the next
    /// send (``SyncEngine/retry(givenUp:)`` sends at once).
    ///
    /// - Throws: ``Nimbus/NimbusError/Code/invalidArguments`` when an ID names no given-up
    ///   change, a change belongs to another account than the local data's, or its record
    ///   has a newer pending change; ``Nimbus/NimbusError/Code/permissionFailure`` in a zone
    ///   shared read-only. Nothing is put back then.
    public func retryGivenUp(_ ids: [Int64]) throws {
        try write { db, outbox in
            let transaction = StoreTransaction(db: db, changes: outbox.changes, now: now)
            let changes = try self.givenUp(ids, transaction)
            let account = try transaction.state(StoreTransaction.StateKey.account) ?? ""
            for given in changes {
                let change = given.change
                guard given.account == account else {
                    throw NimbusError(
                        .invalidArguments,
                        "the change to \(change.recordName) was made by \(given.account), not by \(account.isEmpty ? "nobody" : account) "
                            + "whose data this device holds now: sign in as \(given.account) to send it, or discard it")
                }
                if try Outbox.entry(db, zone: change.zoneName, name: change.recordName) != nil {
                    throw NimbusError(
                        .invalidArguments,
                        "\(change.recordName) has a newer pending change: discard the given-up one (\(given.id)) or edit the record")
                }
                switch change.kind {
                case .save:
                    try outbox.save(
                        LocalRecord(
                            zoneName: change.zoneName, recordName: change.recordName, recordType: change.recordType,
                            fields: change.fields, parent: change.parent))
                case .delete:
                    try outbox.delete(zone: change.zoneName, recordName: change.recordName)
                }
            }
            try transaction.removeFromQuarantine(ids: ids)
        }
    }

    /// Lets given-up changes go for good.
    ///
    /// - Throws: ``Nimbus/NimbusError/Code/invalidArguments`` when an ID names no given-up
    ///   change (nothing is discarded then).
    public func discardGivenUp(_ ids: [Int64]) throws {
        try write { db, outbox in
            let transaction = StoreTransaction(db: db, changes: outbox.changes, now: now)
            for given in try self.givenUp(ids, transaction) {
                outbox.changes.insert(zone: given.change.zoneName, name: given.change.recordName)
            }
            try transaction.removeFromQuarantine(ids: ids)
        }
    }

    /// The given-up changes `ids` names, all of them or an error.
    private func givenUp(_ ids: [Int64], _ transaction: StoreTransaction) throws -> [GivenUpChange] {
        let found = try transaction.givenUp(ids: ids)
        let missing = Set(ids).subtracting(found.map(\.id))
        guard missing.isEmpty else {
            throw NimbusError(
                .invalidArguments,
                "no given-up change with the ID \(missing.sorted().map(String.init).joined(separator: ", ")): list them with givenUp()")
        }
        return found
    }
}

extension LocalStore {
    /// The throttling an earlier run kept, read on the first retry of a run (so counts carry on).
    func persistedThrottling() -> SyncDiagnostics.Throttling? {
        try? pool.read { db in try StoreTransaction(db: db, changes: ChangeTracker(), now: now).persistedThrottling() }
    }
}
