import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// A zone's record change feed through the storage protocol: paging, tokens, coalescing.
@Suite("Store: record change feed")
struct ChangeFeedStoreTests {
    typealias F = Fixture

    @Test(arguments: Engine.withMemory)
    func pagesCoverEveryChangeOnceInVersionOrder(engine: Engine) async throws {
        try await RecordStoreTests.withRecordZone(engine) { store in
            let names = (0..<7).map { "r\($0)" }
            for name in names { _ = try await store.modify([F.operation(.create, name)]) }

            let (pages, token) = try await store.allChanges(since: nil, pageSize: 3)
            #expect(pages.map(\.count) == [3, 3, 1])
            let records = pages.flatMap { $0 }
            #expect(records.map(\.recordName) == names)
            #expect(records.map(\.version) == records.map(\.version).sorted())

            // Caught up: an empty page that keeps its place.
            let empty = try await store.recordChanges(zone: "Z", since: token, limit: 3, in: F.alice)
            #expect(empty.records.isEmpty)
            #expect(!empty.moreComing)
            _ = try await store.modify([F.operation(.forceUpdate, "r0", fields: ["n": 1])])
            #expect(
                try await store.recordChanges(zone: "Z", since: empty.syncToken, limit: 3, in: F.alice).records.map(\.recordName)
                    == ["r0"])
        }
    }

    @Test(arguments: Engine.withMemory)
    func aLimitBelowOneReadsPagesOfOne(engine: Engine) async throws {
        try await RecordStoreTests.withRecordZone(engine) { store in
            _ = try await store.modify([F.operation(.create, "a"), F.operation(.create, "b")])
            let first = try await store.recordChanges(zone: "Z", since: nil, limit: 0, in: F.alice)
            #expect(first.records.map(\.recordName) == ["a"])
            #expect(first.moreComing)
            let second = try await store.recordChanges(zone: "Z", since: first.syncToken, limit: -5, in: F.alice)
            #expect(second.records.map(\.recordName) == ["b"])
        }
    }

    @Test(arguments: Engine.withMemory)
    func aRecordChangedTwiceSinceATokenAppearsOnceInItsLatestState(engine: Engine) async throws {
        try await RecordStoreTests.withRecordZone(engine) { store in
            _ = try await store.modify([F.operation(.create, "a"), F.operation(.create, "b")])
            let token = try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: F.alice).syncToken
            _ = try await store.modify([F.operation(.forceUpdate, "a", fields: ["n": 1])])
            _ = try await store.modify([F.operation(.forceUpdate, "b", fields: ["n": 1])])
            _ = try await store.modify([F.operation(.forceUpdate, "a", fields: ["n": 2])])
            let page = try await store.recordChanges(zone: "Z", since: token, limit: 10, in: F.alice)
            #expect(page.records.map(\.recordName) == ["b", "a"], "ordered by each record's last change")
            #expect(page.records.last?.fields()["n"] == 2)
        }
    }

    @Test(arguments: Engine.withMemory)
    func aRecordCreatedAndDeletedSinceATokenIsNotReported(engine: Engine) async throws {
        try await RecordStoreTests.withRecordZone(engine) { store in
            _ = try await store.modify([F.operation(.create, "kept")])
            let token = try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: F.alice).syncToken
            _ = try await store.modify([F.operation(.create, "brief")])
            _ = try await store.modify([F.operation(.forceDelete, "brief"), F.operation(.forceDelete, "kept")])
            let page = try await store.recordChanges(zone: "Z", since: token, limit: 10, in: F.alice)
            #expect(page.records.map { "\($0.recordName):\($0.deleted)" } == ["kept:true"])
        }
    }

    @Test(arguments: Engine.withMemory)
    func aWriteBetweenPagesIsReadOnTheNextPage(engine: Engine) async throws {
        try await RecordStoreTests.withRecordZone(engine) { store in
            for name in ["a", "b", "c"] { _ = try await store.modify([F.operation(.create, name)]) }
            let first = try await store.recordChanges(zone: "Z", since: nil, limit: 2, in: F.alice)
            #expect(first.records.map(\.recordName) == ["a", "b"])
            #expect(first.moreComing)
            // "a" changes after the first page was read: the reader must see it again.
            _ = try await store.modify([F.operation(.forceUpdate, "a", fields: ["n": 1])])
            let rest = try await store.allChanges(since: first.syncToken, pageSize: 2).pages.flatMap { $0 }
            #expect(rest.map(\.recordName) == ["c", "a"])
        }
    }

    @Test(arguments: Engine.withMemory)
    func tokensAreBoundToTheirZoneAndRefuseForgery(engine: Engine) async throws {
        try await RecordStoreTests.withRecordZone(engine) { store in
            _ = try await store.modifyZones([.create(zoneName: "Y")], in: F.alice)
            _ = try await store.modify([F.operation(.create, "a")])
            let token = try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: F.alice).syncToken
            #expect(await F.errorCode { _ = try await store.recordChanges(zone: "Y", since: token, limit: 10, in: F.alice) } == .badRequest)
            #expect(await F.errorCode { _ = try await store.recordChanges(zone: "Z", since: "garbage", limit: 10, in: F.alice) } == .badRequest)
            var tampered = Array(token)
            tampered[tampered.count / 2] = tampered[tampered.count / 2] == "A" ? "B" : "A"
            #expect(
                await F.errorCode { _ = try await store.recordChanges(zone: "Z", since: String(tampered), limit: 10, in: F.alice) }
                    == .badRequest)
            #expect(await F.errorCode { _ = try await store.recordChanges(zone: "nope", since: nil, limit: 10, in: F.alice) } == .zoneNotFound)
        }
    }

    @Test(arguments: Engine.withMemory)
    func theWrittenFeedHoldsTheSameRecordsAndTokens(engine: Engine) async throws {
        try await RecordStoreTests.withRecordZone(engine) { store in
            for name in ["a", "b", "c"] { _ = try await store.modify([F.operation(.create, name, fields: ["n": 1])]) }
            let closing = #","zoneID":{"ownerRecordName":"_alice","zoneName":"Z"}}"#
            let page = try await store.recordChanges(zone: "Z", since: nil, limit: 2, in: F.alice)
            let written = try await store.writtenRecordChanges(
                zone: "Z", since: nil, limit: 2, zoneClosing: closing, in: F.alice)
            #expect(written.syncToken == page.syncToken)
            #expect(written.moreComing == page.moreComing)
            let json = try JSON.parse(written.recordsJSON)
            #expect(json.array?.compactMap { $0["recordName"]?.string } == ["a", "b"])
            #expect(json.array?.first?["zoneID"]?["zoneName"]?.string == "Z")
        }
    }
}
