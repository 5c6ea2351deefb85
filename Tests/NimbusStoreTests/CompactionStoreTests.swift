import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// Compaction by retention, with time moved by an injected ``ManualWallClock`` rather than
/// waited for: the store stamps deleted zones with its clock; records carry the policy's time.
@Suite("Store: compaction")
struct CompactionStoreTests {
    typealias F = Fixture
    static let retention: Int64 = 30 * 24 * 3600 * 1000

    @Test(arguments: Engine.available)
    func tombstonesOlderThanTheRetentionAreRemovedAndTheirTokensExpire(engine: Engine) async throws {
        let clock = ManualWallClock(millis: F.past)
        try await engine.withStore(clock: clock.wallClock) { store in
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            _ = try await store.modify([F.operation(.create, "a"), F.operation(.create, "b")], now: clock.nowMillis)
            let beforeDelete = try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: F.alice).syncToken
            _ = try await store.modify([F.operation(.forceDelete, "a")], now: clock.nowMillis)
            let afterDelete = try await store.recordChanges(zone: "Z", since: beforeDelete, limit: 10, in: F.alice)
            #expect(afterDelete.records.map(\.deleted) == [true])

            // One millisecond short of the retention: kept.
            clock.advance(by: .milliseconds(Self.retention - 1))
            #expect(
                try await store.compact(retentionMillis: Self.retention, now: clock.nowMillis)
                    == CompactionReport(tombstonesRemoved: 0, zonesRemoved: 0))
            #expect(try await store.recordChanges(zone: "Z", since: beforeDelete, limit: 10, in: F.alice).records.count == 1)

            clock.advance(by: .milliseconds(1))
            #expect(
                try await store.compact(retentionMillis: Self.retention, now: clock.nowMillis)
                    == CompactionReport(tombstonesRemoved: 1, zonesRemoved: 0))
            // A reader from before the deletion can no longer learn of it: its token expired.
            #expect(
                await F.errorCode { _ = try await store.recordChanges(zone: "Z", since: beforeDelete, limit: 10, in: F.alice) }
                    == .changeTokenExpired)
            // A reader who saw the tombstone goes on; the live record stays.
            #expect(try await store.recordChanges(zone: "Z", since: afterDelete.syncToken, limit: 10, in: F.alice).records.isEmpty)
            #expect(try await store.lookupRecords(["b"], zone: "Z", in: F.alice).first != nil)
            // A second pass finds nothing more.
            #expect(
                try await store.compact(retentionMillis: Self.retention, now: clock.nowMillis)
                    == CompactionReport(tombstonesRemoved: 0, zonesRemoved: 0))
        }
    }

    /// A first sync that starts after a compaction pages through the zone's older history:
    /// its tokens lie below the horizon, yet its reader was never served a record whose
    /// tombstone is gone, so every page is answered. (Each token used to expire at the
    /// second page, so a zone with compacted tombstones could never be synced anew.)
    /// A reader whose first page came before a later compaction still expires.
    @Test(arguments: Engine.available)
    func aFirstSyncAfterACompactionReadsEveryPageButAnEarlierReaderExpires(engine: Engine) async throws {
        let clock = ManualWallClock(millis: F.past)
        try await engine.withStore(clock: clock.wallClock) { store in
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            _ = try await store.modify((0..<12).map { F.operation(.create, "r\($0)") }, now: clock.nowMillis)
            _ = try await store.modify((8..<12).map { F.operation(.forceDelete, "r\($0)") }, now: clock.nowMillis)
            clock.advance(by: .milliseconds(Self.retention))
            #expect(try await store.compact(retentionMillis: Self.retention, now: clock.nowMillis).tombstonesRemoved == 4)

            var names: [String] = []
            var token: String?
            var firstPageToken: String?
            repeat {
                let page = try await store.recordChanges(zone: "Z", since: token, limit: 3, in: F.alice)
                names += page.records.map(\.recordName)
                token = page.syncToken
                if firstPageToken == nil { firstPageToken = page.syncToken }
                if !page.moreComing { break }
            } while true
            #expect(names == (0..<8).map { "r\($0)" })

            // Later deletions, compacted while that first page's reader is still below them.
            _ = try await store.modify((0..<2).map { F.operation(.forceDelete, "r\($0)") }, now: clock.nowMillis)
            clock.advance(by: .milliseconds(Self.retention))
            #expect(try await store.compact(retentionMillis: Self.retention, now: clock.nowMillis).tombstonesRemoved == 2)
            #expect(
                await F.errorCode { _ = try await store.recordChanges(zone: "Z", since: firstPageToken, limit: 3, in: F.alice) }
                    == .changeTokenExpired)
            // As does the one that reached the end before them (it holds r0 and r1); a new
            // first sync reads the zone as it is.
            #expect(
                await F.errorCode { _ = try await store.recordChanges(zone: "Z", since: token, limit: 3, in: F.alice) }
                    == .changeTokenExpired)
            let second = try await store.recordChanges(zone: "Z", since: nil, limit: 3, in: F.alice)
            let rest = try await store.recordChanges(zone: "Z", since: second.syncToken, limit: 3, in: F.alice)
            #expect((second.records + rest.records).map(\.recordName) == (2..<8).map { "r\($0)" })
        }
    }

    @Test(arguments: Engine.available)
    func aDeletedZoneIsKeptForTheRetentionByTheStoresClock(engine: Engine) async throws {
        let clock = ManualWallClock(millis: F.past)
        try await engine.withStore(clock: clock.wallClock) { store in
            _ = try await store.modifyZones([.create(zoneName: "Y"), .create(zoneName: "Z")], in: F.alice)
            let beforeDelete = try await store.zoneMetaChanges(since: nil, limit: 10, in: F.alice).syncToken
            clock.advance(by: .seconds(60))
            let deletedAt = clock.nowMillis
            _ = try await store.modifyZones([.delete(zoneName: "Y")], in: F.alice)

            // The zone was deleted at the store's clock: a retention measured from then.
            #expect(
                try await store.compact(retentionMillis: Self.retention, now: deletedAt + Self.retention - 1).zonesRemoved == 0)
            #expect(try await store.zoneMetaChanges(since: beforeDelete, limit: 10, in: F.alice).zones.map(\.zoneName) == ["Y"])
            #expect(try await store.compact(retentionMillis: Self.retention, now: deletedAt + Self.retention).zonesRemoved == 1)
            #expect(
                await F.errorCode { _ = try await store.zoneMetaChanges(since: beforeDelete, limit: 10, in: F.alice) }
                    == .changeTokenExpired)
            #expect(try await store.listZones(in: F.alice).map(\.zoneName) == ["_defaultZone", "Z"])
        }
    }

    @Test(arguments: Engine.available)
    func notificationsExpireByTheClockThatStampedThem(engine: Engine) async throws {
        let clock = ManualWallClock(millis: F.past)
        try await engine.withStore(clock: clock.wallClock) { store in
            _ = try await store.modifySubscriptions(
                [.save(SubscriptionDefinition(subscriptionID: "all", kind: .database))], owner: "_alice", in: F.alice)
            let start = try await store.notificationChanges(for: F.aliceRecipient, since: nil, limit: 10).syncToken
            // Zone changes are stamped by the store's clock.
            let outcome = try await store.modifyZones([.create(zoneName: "Z")], caller: nil, in: F.alice)
            #expect(outcome.notifications.map(\.createdAt) == [F.past])
            let page = try await store.notificationChanges(for: F.aliceRecipient, since: nil, limit: 10)
            #expect(page.notifications.map(\.createdAt) == [F.past])

            clock.advance(by: .milliseconds(Self.retention))
            #expect(try await store.compactNotifications(retentionMillis: Self.retention, now: clock.nowMillis) == 0)
            clock.advance(by: .milliseconds(1))
            #expect(try await store.compactNotifications(retentionMillis: Self.retention, now: clock.nowMillis) == 1)
            #expect(try await store.notificationChanges(for: F.aliceRecipient, since: nil, limit: 10).notifications.isEmpty)
            // A reader from before the notification missed it for good; one who read it goes on.
            #expect(
                await F.errorCode { _ = try await store.notificationChanges(for: F.aliceRecipient, since: start, limit: 10) }
                    == .changeTokenExpired)
            #expect(
                try await store.notificationChanges(for: F.aliceRecipient, since: page.syncToken, limit: 10).notifications
                    .isEmpty)
        }
    }
}
