import Foundation
import Nimbus
import NimbusProtocol

extension SyncEngine {
    /// `changes/database` since the stored token, then `records/changes` for the configured
    /// zones that changed. Tokens are saved in the same transactions as the data they cover.
    func fetchDatabaseChanges() async throws {
        let configured = Set(configuration.zones)
        var changed: [String] = []
        var lost: [(zone: String, purged: Bool)] = []
        let token = try await readDatabaseChanges(
            since: try await store.reading { try $0.databaseToken() },
            { try await self.service.databaseChanges(since: $0) },
            // Start over: every configured zone is looked at again.
            restarted: { changed = configuration.zones }
        ) { changes in
            for zoneID in changes.modifiedZoneIDs where configured.contains(zoneID.zoneName) {
                if !changed.contains(zoneID.zoneName) { changed.append(zoneID.zoneName) }
            }
            for zoneID in changes.deletedZoneIDs + changes.purgedZoneIDs where configured.contains(zoneID.zoneName) {
                lost.append((zoneID.zoneName, changes.purgedZoneIDs.contains(zoneID)))
                changed.removeAll { $0 == zoneID.zoneName }
            }
        }
        var reset: Set<String> = []
        if !lost.isEmpty { reset = try await retrying { try await self.service.encryptedDataResetZones() } }
        for (zone, purged) in lost {
            emit(.zoneDeleted(zone: zone, reason: reset.contains(zone) ? .encryptedDataReset : purged ? .purged : .deleted))
            try await handleZoneLoss(zone)
            // Another device may already have created it again.
            try await fetchZone(zone)
        }
        for zone in changed { try await fetchZone(zone) }
        let finalToken = token
        try await store.transaction { try $0.setDatabaseToken(finalToken) }
        if configuration.syncsSharedDatabase { try await fetchSharedDatabase() }
        emit(.stateSaved)
    }

    /// Every page of a database's zone changes since `token` (`read` asks for one), each
    /// given to `page`; an expired token starts over from none, after `restarted`. Returns
    /// the token after the last page.
    func readDatabaseChanges(
        since token: ServerChangeToken?, _ read: @escaping @Sendable (ServerChangeToken?) async throws -> DatabaseChanges,
        scope: String = "", restarted: () -> Void, page: (DatabaseChanges) -> Void
    ) async throws -> ServerChangeToken {
        var token = token
        while true {
            let changes: DatabaseChanges
            do {
                let since = token
                changes = try await retrying { try await read(since) }
            } catch let error as NimbusError where error.code == .changeTokenExpired {
                try await noteTokenExpired(scope: scope)
                token = nil
                restarted()
                continue
            }
            page(changes)
            token = changes.changeToken
            if !changes.moreComing { return changes.changeToken }
        }
    }

    /// Fetches one zone's changes since its token and applies them page by page. An expired
    /// token makes it refetch from no token and reconcile: local copies the server no longer
    /// has (and that have no pending change) are removed.
    func fetchZoneChanges(_ zone: String, reconcile forceReconcile: Bool = false) async throws {
        var token = forceReconcile ? nil : try await store.reading { try $0.zoneToken(zone) }
        var reconciling = forceReconcile
        var recoveredZone = false
        var seen = Set<String>()
        // Outside a reconciliation only the copies learned from sends are checked at the end:
        // the names the feed returns are kept for those alone, so a first sync of a million
        // records does not hold a million names.
        let unconfirmed = try await store.reading { Set(try $0.copyNames(zone: zone, onlyUnconfirmed: true)) }
        var progress = FetchProgress(zone: zone, started: clock.now())
        // Pages are read ahead of the apply (``FeedReadAhead``); the first page of the fetch
        // (and of a fetch started over) asks how many follow it.
        var feed: FeedReadAhead<RecordZoneChanges>?
        defer { feed?.cancel() }
        while true {
            let first: RecordZoneChanges
            do {
                if feed == nil { feed = readAhead(zone, from: token) }
                guard let next = try await feed?.next() else { break }
                first = next
            } catch let error as NimbusError where error.code == .changeTokenExpired {
                feed = nil
                try await noteTokenExpired(scope: zone)
                token = nil
                reconciling = true
                seen = []
                continue
            } catch let error as NimbusError where error.code == .zoneNotFound && ZoneID(localZoneName: zone).isSharedZone {
                // A shared zone the user can no longer read (the share ended since the
                // database's changes were read): it leaves the device.
                try await removeSharedZone(zone)
                return
            } catch let error as NimbusError where error.code == .zoneNotFound && !recoveredZone {
                feed = nil
                // Gone, or deleted and created again by another device: recover our copies,
                // then read whatever the zone holds now from the start.
                try await handleZoneLoss(zone)
                // Discarded and not recreated: there is nothing to read.
                if configuration.zoneLossPolicy == .discardLocal { return }
                recoveredZone = true
                token = nil
                seen = []
                continue
            }
            // Pages already read while the last transaction ran are applied with this one, in
            // one transaction: a device whose writer is the slow stage commits less often.
            let pages = feed?.pagesRead(after: first) { $0.modifications.count + $0.deletions.count } ?? [first]
            for page in pages {
                let names = page.modifications.map(\.id.recordName) + page.deletions.map(\.recordID.recordName)
                if reconciling {
                    seen.formUnion(names)
                } else if !unconfirmed.isEmpty {
                    seen.formUnion(names.filter(unconfirmed.contains))
                }
            }
            try await apply(pages, zone: zone)
            let last = pages[pages.count - 1]
            token = last.changeToken
            for page in pages {
                progress.add(page, at: clock.now())
                emit(.fetchProgress(progress))
            }
            if !last.moreComing { break }
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

    /// The zone's feed from `token`, each request retried as ``retrying(_:)`` does.
    private func readAhead(_ zone: String, from token: ServerChangeToken?) -> FeedReadAhead<RecordZoneChanges> {
        FeedReadAhead(
            from: token,
            request: { token, first in
                try await self.retrying {
                    try await self.service.zoneChangesAnswer(zone, since: token, countingRemaining: first)
                }
            },
            read: { try await $0.read() }, next: { $0.moreComing ? $0.changeToken : nil })
    }

    /// What applying one page changed, told to listeners once its transaction commits.
    private struct PageApplied {
        var saved: [LocalRecord] = []
        var deleted: [String] = []
        var conflicts: [ConflictRecord] = []
    }

    /// Applies `pages` (one zone's, in the feed's order) in one transaction that ends with the
    /// last page's token, so a device stopped midway resumes after the last page committed.
    /// Events are told page by page once it commits.
    private func apply(_ pages: [RecordZoneChanges], zone: String) async throws {
        let started = clock.now()
        let rules = configuration
        let applied = try await store.transaction { transaction in
            var applied: [PageApplied] = []
            applied.reserveCapacity(pages.count)
            for page in pages {
                var result = PageApplied()
                result.saved.reserveCapacity(page.modifications.count)
                transaction.changes.reserve(page.modifications.count + page.deletions.count)
                // Most pages meet an empty outbox: then no record needs its own outbox lookup.
                let noPending = try !transaction.hasPendingChanges(zone: zone)
                var states = try PageStates(
                    transaction, zone: zone, names: page.modifications.map(\.id.recordName), noPending: noPending)
                for record in page.modifications {
                    let name = record.id.recordName
                    let decision = SyncPlanner.feedModified(
                        record, state: try states.state(of: name), rules: rules.rules(for: record.recordType))
                    result.conflicts += try transaction.apply(decision.actions, zone: zone, name: name)
                    if case .saved(let local)? = decision.visible { result.saved.append(local) }
                }
                for deletion in page.deletions {
                    let name = deletion.recordID.recordName
                    let decision = SyncPlanner.goneFromServer(state: try transaction.localState(zone: zone, name: name))
                    result.conflicts += try transaction.apply(decision.actions, zone: zone, name: name)
                    if decision.visible == .deleted { result.deleted.append(name) }
                }
                applied.append(result)
            }
            try transaction.setZoneToken(zone, pages[pages.count - 1].changeToken)
            return applied
        }
        let ended = clock.now()
        for (page, result) in zip(pages, applied) { announce(result, of: page, zone: zone, started: started, ended: ended) }
    }

    /// Tells listeners what applying `page` changed (its conflicts, the records saved and
    /// deleted, new shares) and reports the apply to the page's trace.
    private func announce(_ result: PageApplied, of page: RecordZoneChanges, zone: String, started: Date, ended: Date) {
        let (saved, deleted, conflicts) = (result.saved, result.deleted, result.conflicts)
        for conflict in conflicts { emit(.conflictResolved(conflict)) }
        if !saved.isEmpty || !deleted.isEmpty { emit(.fetched(zone: zone, saved: saved, deleted: deleted)) }
        if configuration.tracesChanges, let trace = RequestTrace.current, !page.modifications.isEmpty || !page.deletions.isEmpty {
            let report = ApplyTraceReport.make(
                page, zone: zone, saved: saved, deleted: deleted, conflicts: conflicts, trace: trace, started: started,
                ended: ended)
            // Off the fetch's path: a report that fails costs the trace a hop, never the sync.
            let service = self.service
            Task { try? await service.reportTraceSpans([report]) }
        }
        // Only shares that changed for this device (not the echo of its own save).
        if page.modifications.contains(where: { $0.recordType == Share.recordType }) {
            let changedNames = Set(saved.map(\.recordName))
            announceShares(in: page.modifications.filter { changedNames.contains($0.id.recordName) })
        }
    }

    /// After a complete read of the zone (`seen` holds every name it returned): copies the
    /// server no longer has are gone (all of them, or with `onlyUnconfirmed` those learned
    /// from a send, which the feed must have returned).
    private func reconcile(zone: String, keeping seen: Set<String>, onlyUnconfirmed: Bool = false) async throws {
        let removed = try await store.transaction { transaction in
            var removed: [String] = []
            for name in try transaction.copyNames(zone: zone, onlyUnconfirmed: onlyUnconfirmed) where !seen.contains(name) {
                let decision = SyncPlanner.goneFromServer(state: try transaction.localState(zone: zone, name: name))
                _ = try transaction.apply(decision.actions, zone: zone, name: name)
                if decision.visible == .deleted { removed.append(name) }
            }
            return removed
        }
        if !removed.isEmpty { emit(.fetched(zone: zone, saved: [], deleted: removed)) }
    }

    /// A zone is gone from the server (deleted, or the server was wiped): per
    /// ``SyncConfiguration/zoneLossPolicy``, queue the device's records for upload to a
    /// recreated zone, or remove them (pending changes go to the quarantine).
    func handleZoneLoss(_ zone: String) async throws {
        // Another user's zone is never recreated: it left the device with the share.
        if ZoneID(localZoneName: zone).isSharedZone { return try await removeSharedZone(zone) }
        let policy = configuration.zoneLossPolicy
        let cached = try await cachedFiles()
        let removed = try await store.transaction { transaction in
            var removed: [String] = []
            for (name, state) in try transaction.zoneStates(zone: zone).sorted(by: { $0.key < $1.key }) {
                let decision = SyncPlanner.zoneLost(state: state, policy: policy)
                // The server lost the zone's asset bytes too: send the cached ones again.
                let actions = decision.actions.map { action -> StoreAction in
                    switch action {
                    case .rewriteOutbox(let fields, let keys):
                        return .rewriteOutbox(fields: AssetPlanner.reuploading(fields, cachedFile: { cached[$0] }), changedKeys: keys)
                    case .enqueueSave(let type, let fields):
                        return .enqueueSave(recordType: type, fields: AssetPlanner.reuploading(fields, cachedFile: { cached[$0] }))
                    default:
                        return action
                    }
                }
                _ = try transaction.apply(actions, zone: zone, name: name)
                if decision.visible == .deleted { removed.append(name) }
            }
            try transaction.setZoneToken(zone, nil)
            return removed
        }
        switch policy {
        case .recreateAndReupload:
            try await retrying { try await self.service.createZones([zone]) }
            emit(.zoneRecreated(zone: zone))
            // Upload after this fetch releases the lock.
            triggerSend()
        case .discardLocal:
            if !removed.isEmpty { emit(.fetched(zone: zone, saved: [], deleted: removed)) }
        }
    }
}
