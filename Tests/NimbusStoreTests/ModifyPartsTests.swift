import NimbusProtocol
import NimbusStore
import NimbusTestSupport
import Testing

/// A large non-atomic batch of saves committed in parts (``WritePolicy/transactionRecordLimit``):
/// which batches are split, and what a split batch answers and leaves in the store.
@Suite("Store: batches committed in parts")
struct ModifyPartsTests {
    typealias F = Fixture

    static func saves(_ count: Int, prefix: String = "r") -> [RecordOperation] {
        (0..<count).map { F.operation(.create, "\(prefix)\($0)", fields: ["title": .string("record \($0)")]) }
    }

    @Test func onlyLargeNonAtomicBatchesOfSavesOfDistinctRecordsAreSplit() {
        let ten = Self.saves(10)
        #expect(ModifyParts.ranges(of: ten, atomic: false, limit: 4) == [0..<4, 4..<8, 8..<10])
        #expect(ModifyParts.ranges(of: ten, atomic: false, limit: 5) == [0..<5, 5..<10])
        #expect(ModifyParts.ranges(of: ten, atomic: false, limit: 10) == [0..<10], "not larger than the limit")
        #expect(ModifyParts.ranges(of: ten, atomic: false, limit: nil) == [0..<10])
        #expect(ModifyParts.ranges(of: ten, atomic: false, limit: 0) == [0..<10])
        #expect(ModifyParts.ranges(of: ten, atomic: true, limit: 4) == [0..<10], "an atomic batch is one transaction")
        #expect(ModifyParts.ranges(of: [], atomic: false, limit: 4) == [0..<0])

        var withDelete = ten
        withDelete[7] = F.operation(.forceDelete, "gone")
        #expect(ModifyParts.ranges(of: withDelete, atomic: false, limit: 4) == [0..<10], "a delete may cascade")
        var repeated = ten
        repeated[9] = F.operation(.forceUpdate, "r0")
        #expect(ModifyParts.ranges(of: repeated, atomic: false, limit: 4) == [0..<10], "a repeat must fail as in one")
    }

    @Test func aFailingPartFailsEachOfItsRecordsWithItsErrorOrTryAgainLater() {
        let rest = Self.saves(3)[1...]
        let quota = ModifyParts.failedResults(
            of: rest, error: CloudKitError(.quotaExceeded, "over the quota"))
        #expect(quota == [
            .failed(CloudKitError(.quotaExceeded, "over the quota", recordName: "r1")),
            .failed(CloudKitError(.quotaExceeded, "over the quota", recordName: "r2")),
        ])
        struct DiskFull: Error {}
        let store = ModifyParts.failedResults(of: rest, error: DiskFull())
        for (result, name) in zip(store, ["r1", "r2"]) {
            guard case .failed(let error) = result else {
                Issue.record("must fail: \(result)")
                continue
            }
            #expect(error.code == .tryAgainLater)
            #expect(error.recordName == name)
            #expect(error.retryAfter == 1)
        }
    }

    @Test(arguments: Engine.available)
    func aSplitBatchAnswersAsOneAndCommitsInParts(engine: Engine) async throws {
        try await RecordStoreTests.withZone(engine) { store in
            let subscription = SubscriptionDefinition(subscriptionID: "zone", kind: .zone(zoneName: "Z", recordType: nil))
            _ = try await store.modifySubscriptions([.save(subscription)], owner: "_alice", in: F.alice)
            var policy = F.policy()
            policy.transactionRecordLimit = 4
            let operations = Self.saves(10)
            let outcome = try await store.modifyRecords(
                operations, zone: "Z", atomic: false, policy: policy, caller: F.caller, in: F.alice)

            #expect(F.errorCodes(outcome) == Array(repeating: nil, count: 10))
            let saved = F.saved(outcome).compactMap { $0 }
            #expect(saved.map(\.recordName) == operations.map(\.record.recordName), "one result per operation, in order")
            #expect(saved.map(\.version) == Array(saved[0].version..<(saved[0].version + 10)))
            let commit = try #require(outcome.commit)
            #expect(commit.changes.map(\.after) == saved)
            #expect(commit.version == saved.last?.version)
            // One transaction per part, each with its notification for the zone's subscription.
            #expect(commit.notifications.count == 3)
            let page = try await store.recordChanges(zone: "Z", since: nil, limit: 50, in: F.alice)
            #expect(page.records == saved)
        }
    }

    @Test(arguments: Engine.available)
    func overTheQuotaTheFirstPartsStayAndEachLaterRecordFails(engine: Engine) async throws {
        try await RecordStoreTests.withZone(engine) { store in
            let operations = Self.saves(10)
            let recordBytes = Int64(operations[0].fieldsJSON.utf8.count)
            #expect(operations.allSatisfy { Int64($0.fieldsJSON.utf8.count) == recordBytes })
            var policy = F.policy()
            policy.transactionRecordLimit = 4
            policy.quotaBytes = recordBytes * 8 + recordBytes / 2  // two parts fit, the third does not
            let names = operations.map(\.record.recordName)
            let outcome = try await store.modifyRecords(
                operations, zone: "Z", atomic: false, policy: policy, caller: F.caller, in: F.alice)
            #expect(F.errorCodes(outcome) == Array(repeating: nil, count: 8) + [.quotaExceeded, .quotaExceeded])
            let failedNames = outcome.results.suffix(2).map { result -> String? in
                if case .failed(let error) = result { error.recordName } else { nil }
            }
            #expect(failedNames == ["r8", "r9"])
            #expect(try await store.usage(of: F.alice).recordBytes == recordBytes * 8)
            let found = try await store.lookupRecords(names, zone: "Z", in: F.alice)
            #expect(found.map { $0 != nil } == Array(repeating: true, count: 8) + [false, false])
            #expect(outcome.commit?.changes.count == 8)
        }
    }

    @Test(arguments: Engine.available)
    func whenTheFirstPartFailsNothingIsWrittenAndTheErrorIsTheRequests(engine: Engine) async throws {
        try await RecordStoreTests.withZone(engine) { store in
            var policy = F.policy()
            policy.transactionRecordLimit = 4
            policy.quotaBytes = 1
            let refused = await F.errorCode {
                _ = try await store.modifyRecords(
                    Self.saves(10), zone: "Z", atomic: false, policy: policy, caller: F.caller, in: F.alice)
            }
            #expect(refused == .quotaExceeded)
            let usage = try await store.usage(of: F.alice)
            #expect(usage.recordBytes == 0)
            let missingZone = await F.errorCode {
                _ = try await store.modifyRecords(
                    Self.saves(10), zone: "missing", atomic: false, policy: policy, caller: F.caller, in: F.alice)
            }
            #expect(missingZone == .zoneNotFound)
        }
    }
}
