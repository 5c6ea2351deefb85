import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusProtocol

extension SyncEngine {
    /// "Why didn't it sync?": the engine's state as the device sees it, from the local store
    /// and the engine's memory (no network): per zone, the pending saves and deletes with
    /// their age, attempts, last error and next retry, the last fetch and send and their
    /// outcome, the change token; for the engine, the subscriptions, the push channel, the
    /// given-up and quarantined changes, the conflicts and how they were resolved, the
    /// assets waiting to move and the throttling met.
    ///
    /// ```swift
    /// let diagnostics = try await engine.diagnostics()
    /// print("\(diagnostics.pendingCount) pending, \(diagnostics.givenUp.count) given up")
    /// for zone in diagnostics.zones {
    ///     for entry in zone.pending where entry.attempts > 0 {
    ///         print("\(entry.recordName): \(entry.attempts) attempts, last: \(entry.lastError?.description ?? "-")")
    ///     }
    /// }
    /// if diagnostics.throttling.isBackingOff(at: diagnostics.takenAt) { print("throttled by the server") }
    /// ```
    ///
    /// - Parameter pendingLimit: at most this many pending changes per zone, and quarantined
    ///   records, are listed (the oldest); counts cover all of them.
    public func diagnostics(pendingLimit: Int = 100) async throws -> SyncDiagnostics {
        let now = clock.now()
        let limit = max(0, pendingLimit)
        let configured = configuration.zones
        let subscriptions: [(SyncDiagnostics.Subscription.Database, String?, String)] = [
            (.private, configuration.subscriptionID, StoreTransaction.StateKey.subscriptionReady),
            (.shared, configuration.syncsSharedDatabase ? configuration.sharedSubscriptionID : nil,
             StoreTransaction.StateKey.sharedSubscriptionReady),
        ]
        let memory = self.memory.withLockedValue { $0 }
        var diagnostics = try await store.reading { transaction in
            var names = configured
            for zone in try transaction.sharedZoneNames() + transaction.zonesWithDiagnostics() where !names.contains(zone) {
                names.append(zone)
            }
            let subscriptions = try subscriptions.compactMap { database, id, key -> SyncDiagnostics.Subscription? in
                guard let id else { return nil }
                let saved = try transaction.state(key) == id
                let savedAt = try transaction.state(StoreTransaction.subscriptionSavedKey(database))
                    .flatMap(Int64.init).map(Date.init(milliseconds:))
                let state: SyncDiagnostics.Subscription.State =
                    !saved ? .missing : memory.subscriptionsCreated.contains(database) ? .created : .known
                return SyncDiagnostics.Subscription(database: database, id: id, state: state, savedAt: saved ? savedAt : nil)
            }
            return SyncDiagnostics(
                takenAt: now, account: try transaction.state(StoreTransaction.StateKey.account), isSignedOut: false,
                zones: try names.map { try transaction.zoneDiagnostics($0, pendingLimit: limit, now: now) },
                lastDatabaseFetch: try transaction.activity(scope: "").fetch, subscriptions: subscriptions,
                push: memory.push, givenUp: try transaction.givenUp().map(\.summary),
                quarantine: try transaction.quarantineDiagnostics(limit: limit),
                conflicts: try transaction.conflictDiagnostics(recent: 5), assets: try transaction.assetDiagnostics(),
                throttling: try memory.throttling ?? transaction.persistedThrottling() ?? SyncDiagnostics.Throttling())
        }
        diagnostics.isSignedOut = signedOut
        diagnostics.assets.downloadsInFlight = downloads.count
        return diagnostics
    }

    /// Puts given-up changes (``GivenUpChange/id``) back into the outbox as they were, then
    /// sends. A change given up because of a lost zone or an ended share goes to the zone as
    /// it is now (a read-only share refuses it again: the outbox throws).
    ///
    /// ```swift
    /// let rejected = try engine.store.givenUp().filter { $0.reason == .rejected }
    /// try await engine.retry(givenUp: rejected.map(\.id))
    /// ```
    ///
    /// - Throws: ``Nimbus/NimbusError/Code/invalidArguments`` for an unknown ID, a change of
    ///   another account, or a record with a newer pending change (nothing is put back then);
    ///   the send's error after the changes are back in the outbox.
    public func retry(givenUp ids: [Int64]) async throws {
        try store.retryGivenUp(ids)
        try await sendChanges()
    }

    // MARK: - Recording (internal)

    /// ``fetchDatabaseChanges()``, its outcome recorded.
    func fetchDatabase() async throws {
        try await recording(.fetch, scope: "") { try await self.fetchDatabaseChanges() }
    }

    /// ``fetchZoneChanges(_:reconcile:)``, its outcome recorded.
    func fetchZone(_ zone: String, reconcile: Bool = false) async throws {
        try await recording(.fetch, scope: zone) { try await self.fetchZoneChanges(zone, reconcile: reconcile) }
    }

    private func recording(
        _ kind: StoreTransaction.ActivityKind, scope: String, _ body: @Sendable () async throws -> Void
    ) async throws {
        do {
            try await body()
        } catch {
            try? await recordActivity(kind, scope: scope, error: error)
            throw error
        }
        try await recordActivity(kind, scope: scope, error: nil)
    }

    /// Records how a fetch or send ended, with the throttling met meanwhile.
    private func recordActivity(_ kind: StoreTransaction.ActivityKind, scope: String, error: (any Error)?) async throws {
        let now = clock.now()
        let recorded = error.map { RecordedError($0) }
        let throttling = takeThrottling()
        try await store.transaction { transaction in
            try transaction.recordActivity(kind, scope: scope, at: now, error: recorded)
            if let throttling { try transaction.persistThrottling(throttling) }
        }
    }

    /// The throttling to persist, if it changed since it last was.
    private func takeThrottling() -> SyncDiagnostics.Throttling? {
        memory.withLockedValue { memory in
            defer { memory.throttlingChanged = false }
            return memory.throttlingChanged ? memory.throttling : nil
        }
    }

    func noteTokenExpired(scope: String) async throws {
        try await store.transaction { try $0.noteTokenExpired(scope: scope) }
    }

    /// A retryable error of a change's own, waited out before the next pass.
    func noteRetry(after error: NimbusError, delay: Duration) {
        let now = clock.now()
        memory.withLockedValue { $0.retrying(after: error, delay: delay, at: now, persisted: store.persistedThrottling) }
    }

    /// A batch's request failed: every entry of it gets one more attempt with the error, and
    /// the zone's last send the error.
    func recordSendFailure(_ batch: [PendingChange], zone: String, error: any Error) async {
        let now = clock.now()
        let recorded = RecordedError(error)
        let names = batch.map(\.recordName)
        let throttling = takeThrottling()
        try? await store.transaction { transaction in
            for name in names { try transaction.noteAttempt(zone: zone, name: name, error: recorded, at: now) }
            try transaction.recordActivity(.send, scope: zone, at: now, error: recorded)
            if let throttling { try transaction.persistThrottling(throttling) }
        }
    }

    /// A batch's request was answered: the zone's last send succeeded; the changes sent back
    /// with a retryable error go out again after `wait`.
    func recordSent(zone: String, again: [String], retryingIn wait: Duration?) async throws {
        let now = clock.now()
        let throttling = takeThrottling()
        let retryAt = wait.map { now.addingTimeInterval($0.seconds) }
        try await store.transaction { transaction in
            try transaction.recordActivity(.send, scope: zone, at: now, error: nil)
            if let retryAt { try transaction.setNextAttempt(zone: zone, names: again, at: retryAt) }
            if let throttling { try transaction.persistThrottling(throttling) }
        }
    }

    /// The record of `batch` a request-level error refuses for good (a schema violation names
    /// the record), if any: sending the batch again as it is can never succeed.
    nonisolated func refusedRecord(_ error: NimbusError, in batch: [PendingChange]) -> String? {
        guard SyncPlanner.givesUp(error), error.code != .limitExceeded, let name = error.recordID?.recordName,
            batch.contains(where: { $0.recordName == name })
        else { return nil }
        return name
    }

    /// Gives up the change the server refused a whole request for, as if it had answered
    /// that record alone (``SyncPlanner/failed(_:state:)``), and reports it.
    func setAsideRefused(_ name: String, zone: String, error: NimbusError) async throws {
        let now = clock.now()
        let decision = try await store.transaction { transaction in
            let decision = SyncPlanner.failed(error, state: try transaction.localState(zone: zone, name: name))
            _ = try transaction.apply(decision.actions, zone: zone, name: name)
            try transaction.noteAttempt(zone: zone, name: name, error: RecordedError(error), at: now)
            try transaction.recordActivity(.send, scope: zone, at: now, error: RecordedError(error))
            return decision
        }
        switch decision.visible {
        case .saved(let record)?: emit(.fetched(zone: zone, saved: [record], deleted: []))
        case .deleted?: emit(.fetched(zone: zone, saved: [], deleted: [name]))
        case nil: break
        }
        emit(.sent(saved: [], deleted: [], failed: [SyncEvent.SendFailure(zone: zone, recordName: name, error: error)]))
    }

    /// A database subscription was saved on the server: setup's step, recorded with its time.
    func subscriptionSaved(_ database: SyncDiagnostics.Subscription.Database, key: String, id: String) async throws {
        let at = String(clock.now().milliseconds)
        try await store.transaction { transaction in
            try transaction.setState(key, id)
            try transaction.setState(StoreTransaction.subscriptionSavedKey(database), at)
        }
        memory.withLockedValue { _ = $0.subscriptionsCreated.insert(database) }
    }
}
