import Foundation
import Nimbus
import NimbusProtocol

extension SyncEngine {
    private typealias Key = StoreTransaction.StateKey

    /// The shared database's side of setup: its database subscription, recorded when done.
    func setUpSharedDatabase() async throws {
        guard configuration.syncsSharedDatabase, let subscriptionID = configuration.sharedSubscriptionID else { return }
        let ready = try await store.reading { try $0.state(Key.sharedSubscriptionReady) }
        guard ready != subscriptionID else { return }
        let subscription = Subscription(id: subscriptionID, kind: .database)
        try await retrying { try await self.service.saveSharedSubscription(subscription) }
        try await subscriptionSaved(.shared, key: Key.sharedSubscriptionReady, id: subscriptionID)
    }

    /// `changes/database` in the shared database since its token: zones that changed are
    /// fetched (a zone new to the device is announced as ``SyncEvent/shareAccepted(zoneID:)``),
    /// zones whose share ended are removed from the device
    /// (``SyncEvent/shareRevoked(zoneID:)``). A read from no token (the first, or after an
    /// expired token) lists every zone shared now, so a zone the device holds that it does
    /// not list has ended too.
    func fetchSharedDatabase() async throws {
        let stored = try await store.reading { try $0.state(Key.sharedDatabaseToken) }.flatMap(StoreTransaction.decodeToken)
        var complete = stored == nil
        var listed: [ZoneID] = []
        var ended: [ZoneID] = []
        let token = try await readDatabaseChanges(
            since: stored, { try await self.service.sharedDatabaseChanges(since: $0) },
            scope: StoreTransaction.sharedDatabaseScope, restarted: { (complete, listed, ended) = (true, [], []) }
        ) { changes in
            (listed, ended) = SharedZonePlanner.apply(changes, listed: listed, ended: ended)
        }
        let held = try await store.reading { try $0.sharedZoneNames() }.map(ZoneID.init(localZoneName:))
        let plan = SharedZonePlanner.finish(listed: listed, ended: ended, held: held, complete: complete)
        for zoneID in plan.remove { try await removeSharedZone(zoneID.localZoneName) }
        for zoneID in plan.fetch {
            let isNew = !held.contains(zoneID)
            try await fetchZone(zoneID.localZoneName)
            if isNew { emit(.shareAccepted(zoneID: zoneID)) }
        }
        let finalToken = StoreTransaction.encodeToken(token)
        try await store.transaction { try $0.setState(Key.sharedDatabaseToken, finalToken) }
    }

    /// A shared zone the user can no longer read: its records leave the device (pending
    /// changes to them go to the quarantine), its token is forgotten.
    func removeSharedZone(_ zone: String) async throws {
        let removed = try await store.transaction { transaction in
            var removed: [String] = []
            for (name, state) in try transaction.zoneStates(zone: zone).sorted(by: { $0.key < $1.key }) {
                let decision = SyncPlanner.zoneLost(state: state, policy: .discardLocal, reason: .shareRevoked)
                _ = try transaction.apply(decision.actions, zone: zone, name: name)
                if decision.visible == .deleted { removed.append(name) }
            }
            try transaction.forgetZone(zone)
            return removed
        }
        if !removed.isEmpty { emit(.fetched(zone: zone, saved: [], deleted: removed)) }
        emit(.shareRevoked(zoneID: ZoneID(localZoneName: zone)))
    }

    /// Announces the share records among a page's records.
    func announceShares(in records: [Nimbus.Record]) {
        for record in records where record.recordType == Share.recordType {
            if let share = Share(record) { emit(.shareChanged(share)) }
        }
    }
}

/// What the shared database's zone changes mean for the device: which zones to fetch and
/// which to remove. Pure, so its rules are tested without a server.
enum SharedZonePlanner {
    /// Folds one page of `changes/database` into the zones listed (changed) and ended so far.
    static func apply(_ changes: DatabaseChanges, listed: [ZoneID], ended: [ZoneID]) -> (listed: [ZoneID], ended: [ZoneID]) {
        var (listed, ended) = (listed, ended)
        for zoneID in changes.modifiedZoneIDs {
            ended.removeAll { $0 == zoneID }
            if !listed.contains(zoneID) { listed.append(zoneID) }
        }
        for zoneID in changes.deletedZoneIDs + changes.purgedZoneIDs {
            listed.removeAll { $0 == zoneID }
            if !ended.contains(zoneID) { ended.append(zoneID) }
        }
        return (listed, ended)
    }

    /// After the last page: fetch the listed zones; remove the ended ones the device holds,
    /// and, after a `complete` read (from no token), every held zone not listed.
    static func finish(listed: [ZoneID], ended: [ZoneID], held: [ZoneID], complete: Bool) -> (fetch: [ZoneID], remove: [ZoneID]) {
        var remove = ended.filter(held.contains)
        if complete { remove += held.filter { !listed.contains($0) && !remove.contains($0) } }
        return (listed, remove)
    }
}
