import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// Zones through the storage protocol: creation, deletion, incarnations, and the two zone feeds.
@Suite("Store: zones")
struct ZoneStoreTests {
    typealias F = Fixture

    @Test(arguments: Engine.withMemory)
    func aDatabaseNeverWrittenHasOnlyTheDefaultZone(engine: Engine) async throws {
        try await engine.withRecordStore { store async throws in
            #expect(try await store.listZones(in: F.alice) == [.defaultZone])
            #expect(try await store.lookupZones(["_defaultZone", "Z"], in: F.alice) == [.defaultZone, nil])
            #expect(await F.errorCode { _ = try await store.lookupRecords(["a"], zone: "Z", in: F.alice) } == .zoneNotFound)
            #expect(try await store.lookupRecords(["a"], zone: "_defaultZone", in: F.alice) == [nil])
        }
    }

    @Test(arguments: Engine.withMemory)
    func savingAnExistingZoneChangesNothingAndBadDeletionsFailAlone(engine: Engine) async throws {
        try await engine.withRecordStore { store in
            let first = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            guard case .saved(let created) = first.first else {
                Issue.record("the zone was not created: \(first)")
                return
            }
            let results = try await store.modifyZones(
                [.create(zoneName: "Z"), .delete(zoneName: "_defaultZone"), .delete(zoneName: "nope")], in: F.alice)
            #expect(results.first == .saved(created), "saving it again is a no-op")
            guard case .failed(_, let defaultError) = results[1], case .failed(_, let missingError) = results[2] else {
                Issue.record("both deletions should fail: \(results)")
                return
            }
            #expect(defaultError.code == .badRequest)
            #expect(missingError.code == .zoneNotFound)
            #expect(try await store.listZones(in: F.alice).map(\.zoneName) == ["_defaultZone", "Z"])
            #expect(try await store.lookupZones(["Z"], in: F.alice) == [created])
        }
    }

    @Test(arguments: Engine.withMemory)
    func aRecreatedZoneIsANewIncarnationWithoutTheOldRecords(engine: Engine) async throws {
        try await engine.withRecordStore { store in
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            let first = try #require(try await store.lookupZones(["Z"], in: F.alice).first ?? nil)
            _ = try await store.modify([F.operation(.create, "a", fields: ["n": 1])])
            let oldToken = try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: F.alice).syncToken

            #expect(try await store.modifyZones([.delete(zoneName: "Z")], in: F.alice) == [.deleted(zoneName: "Z")])
            #expect(try await store.lookupZones(["Z"], in: F.alice) == [nil])
            #expect(try await store.listZones(in: F.alice) == [.defaultZone])
            #expect(await F.errorCode { _ = try await store.lookupRecords(["a"], zone: "Z", in: F.alice) } == .zoneNotFound)
            #expect(await F.errorCode { _ = try await store.modify([F.operation(.create, "b")]) } == .zoneNotFound)
            #expect(
                await F.errorCode { _ = try await store.recordChanges(zone: "Z", since: oldToken, limit: 10, in: F.alice) }
                    == .zoneNotFound)

            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            let second = try #require(try await store.lookupZones(["Z"], in: F.alice).first ?? nil)
            #expect(second.incarnation > first.incarnation)
            #expect(try await store.lookupRecords(["a"], zone: "Z", in: F.alice) == [nil], "the old zone's records are gone")
            let fresh = try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: F.alice)
            #expect(fresh.records.isEmpty)
            // A token of the old incarnation reads as a deleted zone, never as the new one's feed.
            #expect(
                await F.errorCode { _ = try await store.recordChanges(zone: "Z", since: oldToken, limit: 10, in: F.alice) }
                    == .zoneNotFound)
            #expect(try await store.recordChanges(zone: "Z", since: fresh.syncToken, limit: 10, in: F.alice).records.isEmpty)
        }
    }

    @Test(arguments: Engine.withMemory)
    func zoneFeedsReportCreationsDeletionsAndChangedZones(engine: Engine) async throws {
        try await engine.withRecordStore { store in
            _ = try await store.modifyZones([.create(zoneName: "Y"), .create(zoneName: "Z")], in: F.alice)
            let meta = try await store.zoneMetaChanges(since: nil, limit: 10, in: F.alice)
            #expect(Set(meta.zones.map(\.zoneName)).isSuperset(of: ["Y", "Z"]))
            #expect(!meta.moreComing)
            let database = try await store.databaseChanges(since: nil, limit: 10, in: F.alice)

            // A record written in Z changes Z's content, not the zone list.
            _ = try await store.modify([F.operation(.create, "a")])
            #expect(try await store.zoneMetaChanges(since: meta.syncToken, limit: 10, in: F.alice).zones.isEmpty)
            let changed = try await store.databaseChanges(since: database.syncToken, limit: 10, in: F.alice)
            #expect(changed.zones.map(\.zoneName) == ["Z"])

            // Deleting Y shows in both feeds, as deleted.
            _ = try await store.modifyZones([.delete(zoneName: "Y")], in: F.alice)
            let metaAfter = try await store.zoneMetaChanges(since: meta.syncToken, limit: 10, in: F.alice)
            #expect(metaAfter.zones.map(\.zoneName) == ["Y"])
            #expect(metaAfter.zones.first?.deleted == true)
            let databaseAfter = try await store.databaseChanges(since: changed.syncToken, limit: 10, in: F.alice)
            #expect(databaseAfter.zones.map { "\($0.zoneName):\($0.deleted)" } == ["Y:true"])
            // Read from the start, a deleted zone is left out.
            #expect(!(try await store.zoneMetaChanges(since: nil, limit: 10, in: F.alice).zones.contains { $0.zoneName == "Y" }))
            // Nothing since the latest token.
            #expect(try await store.zoneMetaChanges(since: metaAfter.syncToken, limit: 10, in: F.alice).zones.isEmpty)
        }
    }

    @Test(arguments: Engine.withMemory)
    func zoneFeedsPage(engine: Engine) async throws {
        try await engine.withRecordStore { store in
            let names = (0..<5).map { "Z\($0)" }
            _ = try await store.modifyZones(names.map { .create(zoneName: $0) }, in: F.alice)
            var seen: [String] = []
            var token: String? = nil
            var pages = 0
            while true {
                let page = try await store.zoneMetaChanges(since: token, limit: 2, in: F.alice)
                #expect(page.zones.count <= 2)
                seen += page.zones.map(\.zoneName)
                token = page.syncToken
                pages += 1
                if !page.moreComing || pages > 10 { break }
            }
            #expect(pages >= 3)
            #expect(seen.filter { $0 != "_defaultZone" } == names, "each zone once, in creation order")
        }
    }

    @Test(arguments: Engine.withMemory)
    func eachDatabaseHasItsOwnZones(engine: Engine) async throws {
        try await engine.withRecordStore { store in
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            #expect(try await store.lookupZones(["Z"], in: F.bob) == [nil])
            let aliceToken = try await store.databaseChanges(since: nil, limit: 10, in: F.alice).syncToken
            #expect(await F.errorCode { _ = try await store.databaseChanges(since: aliceToken, limit: 10, in: F.bob) } != nil)
        }
    }
}
