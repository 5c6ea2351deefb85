import NimbusStore

/// The API's one way to write records and zones: each commit's notifications go to push
/// delivery as soon as it returns, so that no write path can commit and forget to push.
///
/// ```swift
/// let outcome = try await commits.modifyRecords(operations, zone: "Notes", atomic: true,
///                                               policy: policy, caller: caller, in: database)
/// // outcome.commit?.notifications are on their way to the devices already.
/// ```
///
/// Handlers never call the store's `modifyRecords` or `modifyZones` themselves
/// (`CommitPathTests` checks the sources).
struct Commits: Sendable {
    let store: any RecordStore
    let delivery: any PushDelivery

    /// ``RecordStore/modifyRecords(_:zone:atomic:policy:caller:in:)``, then delivery of its notifications.
    func modifyRecords(
        _ operations: [RecordOperation], zone: String, atomic: Bool, policy: WritePolicy, caller: Caller,
        in database: DatabaseKey
    ) async throws -> ModifyOutcome {
        let outcome = try await store.modifyRecords(
            operations, zone: zone, atomic: atomic, policy: policy, caller: caller, in: database)
        if let commit = outcome.commit, !commit.notifications.isEmpty { await delivery.deliver(commit.notifications) }
        return outcome
    }

    /// ``RecordStore/modifyZones(_:caller:in:)``, then delivery of its notifications.
    func modifyZones(_ operations: [ZoneOperation], caller: Caller?, in database: DatabaseKey) async throws
        -> ZoneModifyOutcome
    {
        let outcome = try await store.modifyZones(operations, caller: caller, in: database)
        if !outcome.notifications.isEmpty { await delivery.deliver(outcome.notifications) }
        return outcome
    }
}

extension CloudKitAPI {
    /// Writes through ``Commits``: committed, then pushed.
    var commits: Commits { Commits(store: store, delivery: delivery) }
}
