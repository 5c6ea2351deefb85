import Foundation
import Nimbus
import NimbusProtocol

extension SyncEngine {
    private typealias Key = StoreTransaction.StateKey

    /// Compares the signed-in account with the one the local data belongs to. On a switch,
    /// the old account's records and pending changes are quarantined (kept, recoverable),
    /// never silently deleted or uploaded to the new account.
    func checkAccount() async throws {
        let current = try await retrying { try await self.service.currentUserRecordName() }
        let previous = try await store.transaction { transaction -> String? in
            let previous = try transaction.state(Key.account)
            if let previous, previous != current { try transaction.quarantineAll(account: previous) }
            try transaction.setState(Key.account, current)
            return previous
        }
        if let previous, previous != current { emit(.accountChanged(from: previous, to: current)) }
    }

    /// Signs out: the account's local data and outbox go to the quarantine.
    public func signOut() async throws {
        let previous = try await withLock {
            try await self.store.transaction { transaction -> String? in
                let previous = try transaction.state(Key.account)
                if let previous { try transaction.quarantineAll(account: previous) }
                try transaction.setState(Key.account, nil)
                return previous
            }
        }
        emit(.accountChanged(from: previous, to: nil))
    }

    /// The setup chain: create the zones, then the subscription. Each step is recorded when
    /// done, so a restart resumes where it stopped and a finished setup costs nothing.
    func setUp() async throws {
        let zonesKey = configuration.zones.sorted().joined(separator: ",")
        let (zonesReady, subscriptionReady) = try await store.reading { transaction in
            (try transaction.state(Key.zonesReady), try transaction.state(Key.subscriptionReady))
        }
        if zonesReady != zonesKey {
            try await retrying { try await self.service.createZones(self.configuration.zones) }
            try await store.transaction { try $0.setState(Key.zonesReady, zonesKey) }
        }
        if let subscriptionID = configuration.subscriptionID, subscriptionReady != subscriptionID {
            let subscription = Subscription(id: subscriptionID, kind: .database)
            try await retrying { try await self.service.saveSubscription(subscription) }
            try await subscriptionSaved(.private, key: Key.subscriptionReady, id: subscriptionID)
        }
        try await setUpSharedDatabase()
    }
}

/// The result of comparing a device's view of a zone with the server's.
public struct SyncCheck: Sendable, Equatable {
    public var zone: String
    /// On the server, not on the device.
    public var missingLocally: [String]
    /// On the device (with no pending change), not on the server.
    public var extraLocally: [String]
    /// On both, at different versions (and no pending change explains it).
    public var outdated: [String]
    /// Changes still waiting in the outbox.
    public var pending: Int

    public var isInSync: Bool { missingLocally.isEmpty && extraLocally.isEmpty && outdated.isEmpty }
}

extension SyncEngine {
    /// "Am I in sync?": compares the device's copies of a zone (names and change tags) with
    /// the server's, and with `repair` refetches the zone from scratch when they differ.
    public func check(zone: String, repair: Bool = false) async throws -> SyncCheck {
        let result = try await withLock { () -> SyncCheck in
            var server: [String: String] = [:]
            var token: ServerChangeToken?
            while true {
                let since = token
                let page = try await self.retrying { try await self.service.zoneChanges(zone, since: since) }
                for record in page.modifications { server[record.id.recordName] = record.recordChangeTag ?? "" }
                token = page.changeToken
                if !page.moreComing { break }
            }
            let (local, pendingNames) = try await self.store.reading { try $0.zoneSummary(zone: zone) }
            return SyncCheck(
                zone: zone,
                missingLocally: server.keys.filter { local[$0] == nil && !pendingNames.contains($0) }.sorted(),
                extraLocally: local.keys.filter { server[$0] == nil && !pendingNames.contains($0) }.sorted(),
                outdated: server.keys.filter {
                    local[$0] != nil && local[$0] != server[$0] && !pendingNames.contains($0)
                }.sorted(),
                pending: pendingNames.count)
        }
        if repair && !result.isInSync {
            try await withLock {
                try await self.store.transaction { try $0.setZoneToken(zone, nil) }
                try await self.refetchFromScratch(zone)
            }
        }
        return result
    }

    /// Refetches a zone from no token and reconciles, as after an expired token.
    func refetchFromScratch(_ zone: String) async throws {
        try await fetchZone(zone, reconcile: true)
    }
}
