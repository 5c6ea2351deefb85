import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// Record writes through the storage protocol: change tags, conflicts, atomic batches,
/// tombstones and the stamps a write policy gives.
@Suite("Store: records")
struct RecordStoreTests {
    typealias F = Fixture

    /// Runs `body` on a fresh store of `engine` with zone Z in Alice's database.
    static func withZone(_ engine: Engine, _ body: (any NimbusStorage) async throws -> Void) async throws {
        try await engine.withStore { store in
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            try await body(store)
        }
    }

    /// Runs `body` on a fresh record store of `engine` (the in-memory one included) with zone
    /// Z in Alice's database.
    static func withRecordZone(_ engine: Engine, _ body: (any RecordStore) async throws -> Void) async throws {
        try await engine.withRecordStore { store in
            _ = try await store.modifyZones([.create(zoneName: "Z")], in: F.alice)
            try await body(store)
        }
    }

    @Test(arguments: Engine.withMemory)
    func aLockedSaveNeedsTheCurrentChangeTag(engine: Engine) async throws {
        try await Self.withRecordZone(engine) { store in
            let created = try #require(F.saved(try await store.modify([F.operation(.create, "a", fields: ["n": 1])])).first ?? nil)
            let updated = try #require(
                F.saved(try await store.modify([F.operation(.update, "a", tag: created.changeTag, fields: ["n": 2])])).first
                    ?? nil)
            #expect(updated.changeTag != created.changeTag)
            #expect(updated.version > created.version)

            // The first tag is stale now: CONFLICT, with the server's record to merge with.
            let stale = try await store.modify([F.operation(.update, "a", tag: created.changeTag, fields: ["n": 3])])
            guard case .failed(let conflict) = stale.results.first else {
                Issue.record("a stale tag must fail: \(stale.results)")
                return
            }
            #expect(conflict.code == .conflict)
            #expect(conflict.serverRecord?.recordChangeTag == updated.changeTag)
            #expect(stale.commit == nil, "nothing was written")
            #expect(try await store.lookupRecords(["a"], zone: "Z", in: F.alice).first??.fields()["n"] == 2)

            // Without a tag a locked save is a bad request; a force save ignores tags.
            #expect(F.errorCodes(try await store.modify([F.operation(.update, "a", fields: ["n": 4])])) == [.badRequest])
            let forced = try await store.modify([F.operation(.forceUpdate, "a", tag: created.changeTag, fields: ["n": 5])])
            #expect(F.errorCodes(forced) == [nil])
            #expect(try await store.lookupRecords(["a"], zone: "Z", in: F.alice).first??.fields()["n"] == 5)

            // A locked delete with the stale tag fails as well; without a tag, a delete deletes by name.
            #expect(F.errorCodes(try await store.modify([F.operation(.delete, "a", tag: created.changeTag)])) == [.conflict])
            #expect(F.errorCodes(try await store.modify([F.operation(.delete, "a")])) == [nil])
            #expect(try await store.lookupRecords(["a"], zone: "Z", in: F.alice).first == .some(nil))
        }
    }

    @Test(arguments: Engine.withMemory)
    func createUpdateAndDeleteRefuseWhatTheyCannotApply(engine: Engine) async throws {
        try await Self.withRecordZone(engine) { store in
            _ = try await store.modify([F.operation(.create, "a")])
            let outcome = try await store.modify([
                F.operation(.create, "a"), F.operation(.update, "missing", tag: "1"), F.operation(.forceDelete, "gone"),
                F.operation(.create, "b"), F.operation(.forceUpdate, "b"),
            ])
            #expect(
                F.errorCodes(outcome) == [.exists, .notFound, .notFound, nil, .badRequest],
                "a non-atomic batch applies what it can; a name may appear once per request")
            #expect(try await store.lookupRecords(["b"], zone: "Z", in: F.alice).first != nil)
        }
    }

    @Test(arguments: Engine.withMemory)
    func anAtomicBatchWritesAllOrNothing(engine: Engine) async throws {
        try await Self.withRecordZone(engine) { store in
            _ = try await store.modify([F.operation(.create, "a")])
            let before = try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: F.alice)
            let failed = try await store.modify([F.operation(.create, "b"), F.operation(.create, "a")], atomic: true)
            #expect(F.errorCodes(failed) == [.atomicError, .exists])
            #expect(failed.commit == nil)
            #expect(try await store.lookupRecords(["b"], zone: "Z", in: F.alice) == [nil])
            let after = try await store.recordChanges(zone: "Z", since: before.syncToken, limit: 10, in: F.alice)
            #expect(after.records.isEmpty, "a failed atomic batch leaves no trace in the feed")

            let applied = try await store.modify([F.operation(.create, "b"), F.operation(.create, "c")], atomic: true)
            #expect(F.errorCodes(applied) == [nil, nil])
            #expect(try await store.lookupRecords(["b", "c"], zone: "Z", in: F.alice).allSatisfy { $0 != nil })
        }
    }

    @Test(arguments: Engine.withMemory)
    func writesAreStampedWithThePolicysTimeCallerAndDevice(engine: Engine) async throws {
        try await Self.withRecordZone(engine) { store in
            let created = try #require(
                F.saved(try await store.modify([F.operation(.create, "a")], now: F.past)).first ?? nil)
            #expect(created.created == RecordStamp(timestamp: F.past, userRecordName: "_alice", deviceID: "phone"))
            #expect(created.modified == created.created)
            let later = F.past + 61_000
            _ = try await store.modify([F.operation(.forceUpdate, "a", fields: ["n": 1])], now: later)
            let stored = try #require(try await store.lookupRecords(["a"], zone: "Z", in: F.alice).first ?? nil)
            #expect(stored.created.timestamp == F.past, "creation keeps its stamp")
            #expect(stored.modified.timestamp == later)
        }
    }

    @Test(arguments: Engine.withMemory)
    func aDeletionLeavesATombstoneInTheFeedAndNothingToLookUp(engine: Engine) async throws {
        try await Self.withRecordZone(engine) { store in
            _ = try await store.modify([F.operation(.create, "a", fields: ["n": 1]), F.operation(.create, "b")])
            let token = try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: F.alice).syncToken
            let deleted = try await store.modify([F.operation(.forceDelete, "a")], now: F.past + 5_000)
            #expect(deleted.results == [.deleted(recordName: "a")])
            #expect(try await store.lookupRecords(["a", "b"], zone: "Z", in: F.alice).map { $0?.recordName } == [nil, "b"])

            let changes = try await store.recordChanges(zone: "Z", since: token, limit: 10, in: F.alice)
            let tombstone = try #require(changes.records.first)
            #expect(changes.records.count == 1)
            #expect(tombstone.recordName == "a")
            #expect(tombstone.deleted)
            #expect(tombstone.fieldsJSON == "{}", "a tombstone keeps no fields")
            #expect(tombstone.modified.timestamp == F.past + 5_000)
            // Read from the start, the deleted record is not there at all.
            #expect(try await store.recordChanges(zone: "Z", since: nil, limit: 10, in: F.alice).records.map(\.recordName) == ["b"])

            // Creating the name again brings it back, with a new tag.
            let again = try #require(F.saved(try await store.modify([F.operation(.create, "a")])).first ?? nil)
            #expect(again.version > tombstone.version)
            #expect(try await store.lookupRecords(["a"], zone: "Z", in: F.alice).first??.fields() == [:])
        }
    }

    @Test(arguments: Engine.withMemory)
    func eachUsersDatabaseIsItsOwn(engine: Engine) async throws {
        try await engine.withRecordStore { store in
            _ = try await store.modify([F.operation(.create, "a")], zone: "_defaultZone")
            #expect(try await store.lookupRecords(["a"], zone: "_defaultZone", in: F.bob) == [nil])
            _ = try await store.modify([F.operation(.create, "a")], zone: "_defaultZone", in: F.bob)
            let alices = try await store.recordChanges(zone: "_defaultZone", since: nil, limit: 10, in: F.alice)
            #expect(alices.records.map(\.recordName) == ["a"])
            #expect(
                await F.errorCode {
                    _ = try await store.recordChanges(zone: "_defaultZone", since: alices.syncToken, limit: 10, in: F.bob)
                } == .badRequest, "a token of Alice's database is not Bob's")
        }
    }
}
