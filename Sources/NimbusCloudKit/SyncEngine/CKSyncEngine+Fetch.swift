import Foundation
import Nimbus

extension CKSyncEngine {
    /// A fetch: database changes page by page, then each changed zone's records, with the
    /// options the delegate's ``CKSyncEngineDelegate/nextFetchChangesOptions(_:syncEngine:)``
    /// returns for `options`.
    func performFetch(reason: SyncReason, options: FetchChangesOptions) async throws {
        try requireSyncableDatabase()
        guard try await checkAccount() else { return }
        let asked = FetchChangesContext(reason: reason, options: options)
        let context = FetchChangesContext(
            reason: reason, options: await delegate?.nextFetchChangesOptions(asked, syncEngine: self) ?? options)
        try Task.checkCancellation()
        await emit(.willFetchChanges(.init(context: context)))
        try await fetchDatabaseChanges()

        let options = context.options
        var zones = state.zoneIDsWithUnfetchedServerChanges.filter { options.scope.contains($0) }
        let first = options.prioritizedZoneIDs.filter(zones.contains)
        zones = first + zones.filter { !first.contains($0) }
        for zoneID in zones {
            try Task.checkCancellation()
            await fetchZone(zoneID)
        }
        await emit(.didFetchChanges(.init(context: context)))
    }

    private func fetchDatabaseChanges() async throws {
        while true {
            try Task.checkCancellation()
            let token = state.data.current.databaseToken.map { CKServerChangeToken(ServerChangeToken(rawValue: $0)) }
            let page: (
                modifications: [CKDatabase.DatabaseChange.Modification], deletions: [CKDatabase.DatabaseChange.Deletion],
                changeToken: CKServerChangeToken, moreComing: Bool
            )
            do {
                page = try await database.databaseChanges(since: token)
            } catch let error as CKError where error.code == .changeTokenExpired && token != nil {
                state.data.withLock { $0.databaseToken = nil }
                continue
            }
            let deletions = page.deletions
            if !page.modifications.isEmpty || !deletions.isEmpty {
                await emit(.fetchedDatabaseChanges(.init(modifications: page.modifications, deletions: deletions)))
            }
            state.data.withLock { stored in
                stored.databaseToken = page.changeToken.token.rawValue
                for modification in page.modifications {
                    let zone = StoredZoneID(modification.zoneID)
                    if !stored.zonesWithUnfetchedChanges.contains(zone) { stored.zonesWithUnfetchedChanges.append(zone) }
                }
                for deletion in deletions {
                    stored.zonesWithUnfetchedChanges.removeAll { $0 == StoredZoneID(deletion.zoneID) }
                    stored.zoneTokens[deletion.zoneID.storageKey] = nil
                }
            }
            await emitStateUpdate()
            if !page.moreComing { return }
        }
    }

    /// A page of a zone's changes as ``CKDatabase/recordZoneChanges(inZoneWith:since:desiredKeys:resultsLimit:)``
    /// returns it.
    typealias ZoneChangesPage = (
        modificationResultsByID: [CKRecord.ID: Result<CKDatabase.RecordZoneChange.Modification, any Error>],
        deletions: [CKDatabase.RecordZoneChange.Deletion], changeToken: CKServerChangeToken, moreComing: Bool
    )

    /// Fetches one zone's pages; a failure ends the zone's fetch and is reported in its
    /// `didFetchRecordZoneChanges` (the zone stays unfetched, to try again next time).
    ///
    /// The zone's pages are read ahead while the delegate handles this one
    /// (``FeedReadAhead``): they are used only if the zone's stored token is still the one
    /// the feed went on from when the loop comes round; otherwise the feed starts again from
    /// the stored token.
    private func fetchZone(_ zoneID: CKRecordZone.ID) async {
        await emit(.willFetchRecordZoneChanges(.init(zoneID: zoneID)))
        var failure: CKError?
        var feed: (from: String?, pages: FeedReadAhead<ZoneChangesPage>)?
        defer { feed?.pages.cancel() }
        do {
            while true {
                try Task.checkCancellation()
                let stored = state.data.current.zoneTokens[zoneID.storageKey]
                let first: ZoneChangesPage
                do {
                    if feed == nil || feed?.from != stored {
                        feed?.pages.cancel()
                        feed = (stored, try readAhead(zoneID, from: stored.map { ServerChangeToken(rawValue: $0) }))
                    }
                    guard let next = try await feed?.pages.next() else { break }
                    first = next
                } catch let error as CKError where error.code == .changeTokenExpired && stored != nil {
                    feed = nil
                    state.data.withLock { $0.zoneTokens[zoneID.storageKey] = nil }
                    continue
                }
                // Pages already read while the delegate handled the last event come in this
                // one: an app that writes each event in a transaction commits less often.
                let pages =
                    feed?.pages.pagesRead(after: first) { $0.modificationResultsByID.count + $0.deletions.count } ?? [first]
                let page = pages[pages.count - 1]
                feed?.from = page.changeToken.token.rawValue
                let (modifications, deletions) = Self.changes(of: pages)
                if !modifications.isEmpty || !deletions.isEmpty {
                    await emit(.fetchedRecordZoneChanges(.init(modifications: modifications, deletions: deletions)))
                }
                state.data.withLock { stored in
                    stored.zoneTokens[zoneID.storageKey] = page.changeToken.token.rawValue
                    if !page.moreComing { stored.zonesWithUnfetchedChanges.removeAll { $0 == StoredZoneID(zoneID) } }
                }
                await emitStateUpdate()
                if !page.moreComing { break }
            }
        } catch {
            failure = CKError.wrapping(error)
            if failure?.code == .zoneNotFound {
                // The zone is gone: nothing more to fetch from it.
                state.data.withLock { stored in
                    stored.zonesWithUnfetchedChanges.removeAll { $0 == StoredZoneID(zoneID) }
                    stored.zoneTokens[zoneID.storageKey] = nil
                }
            }
        }
        await emit(.didFetchRecordZoneChanges(.init(zoneID: zoneID, error: failure)))
    }

    /// What `pages` (in the feed's order) changed, as one event tells it: a record's last
    /// change wins (a record saved on one page and deleted on a later one is only deleted),
    /// modifications in name order.
    static func changes(of pages: [ZoneChangesPage]) -> (
        modifications: [CKDatabase.RecordZoneChange.Modification], deletions: [CKDatabase.RecordZoneChange.Deletion]
    ) {
        var modifications: [CKRecord.ID: CKDatabase.RecordZoneChange.Modification] = [:]
        var deletions: [CKRecord.ID: (order: Int, deletion: CKDatabase.RecordZoneChange.Deletion)] = [:]
        var order = 0
        for page in pages {
            for case .success(let modification) in page.modificationResultsByID.values {
                deletions[modification.recordID] = nil
                modifications[modification.recordID] = modification
            }
            for deletion in page.deletions {
                modifications[deletion.recordID] = nil
                deletions[deletion.recordID] = (order, deletion)
                order += 1
            }
        }
        return (
            modifications.values.sorted { $0.recordID.recordName < $1.recordID.recordName },
            deletions.values.sorted { $0.order < $1.order }.map(\.deletion)
        )
    }

    /// The zone's pages from `token`, as ``CKDatabase/recordZoneChanges(inZoneWith:since:desiredKeys:resultsLimit:)``
    /// returns them.
    private func readAhead(_ zoneID: CKRecordZone.ID, from token: ServerChangeToken?) throws(CKError)
        -> FeedReadAhead<ZoneChangesPage>
    {
        let database = try self.database.configured()
        return FeedReadAhead(
            from: token,
            request: { token, _ in
                try await mappingErrors { try await database.recordZoneChangesAnswer(inZoneWith: zoneID.nimbus, since: token) }
            },
            read: { answer in
                await CKDatabase.zoneChanges(try await mappingErrors { try await answer.read() }, of: database)
            },
            next: { $0.moreComing ? $0.changeToken.token : nil })
    }
}
