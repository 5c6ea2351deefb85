import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// CloudKit takes 400 items in one modify operation; the server takes 400 per request. A
/// larger non-atomic modify is split into requests without the app seeing it; an atomic one
/// over the limit in one zone fails with `limitExceeded`, as in CloudKit.
@Suite("Request limits")
struct RequestLimitTests {
    static let zoneID = CKRecordZone.ID(zoneName: "Big")

    static func notes(_ range: Range<Int>) -> [CKRecord] {
        range.map { CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "n\($0)", zoneID: zoneID)) }
    }

    /// Runs `operation` on `database` and returns its final result.
    static func run(_ operation: CKModifyRecordsOperation, on database: CKDatabase) async -> Result<Void, any Error> {
        await withCheckedContinuation { continuation in
            operation.modifyRecordsResultBlock = { continuation.resume(returning: $0) }
            database.add(operation)
        }
    }

    @Test(arguments: Engine.available)
    func aModifyOfMoreThan400RecordsIsSplitAndAnAtomicOneOver400FailsWithLimitExceeded(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            _ = try await database.save(CKRecordZone(zoneID: Self.zoneID))

            // 450 saves and 10 deletions, not atomic: every item gets its result.
            let saved = CallbackLog()
            let operation = CKModifyRecordsOperation(recordsToSave: Self.notes(0..<450))
            operation.isAtomic = false
            operation.perRecordSaveBlock = { id, result in
                if (try? result.get()) != nil { saved.append(id.recordName) }
            }
            let result = await Self.run(operation, on: database)
            #expect((try? result.get()) != nil, "\(result)")
            #expect(Set(saved.events).count == 450)

            let (_, deletions) = try await database.modifyRecords(
                saving: Self.notes(450..<850), deleting: Self.notes(0..<10).map(\.recordID), atomically: false)
            #expect(deletions.count == 10)
            #expect(deletions.values.allSatisfy { (try? $0.get()) != nil })
            var names: Set<String> = []
            var token: CKServerChangeToken?
            var moreComing = true
            while moreComing {
                let page = try await database.recordZoneChanges(inZoneWith: Self.zoneID, since: token)
                names.formUnion(page.modificationResultsByID.keys.map(\.recordName))
                token = page.changeToken
                moreComing = page.moreComing
            }
            #expect(names.count == 840)

            // Atomic, 401 items in one zone: CloudKit's limitExceeded, and nothing written.
            let atomic = CKModifyRecordsOperation(recordsToSave: Self.notes(1000..<1401))
            atomic.isAtomic = true
            guard case .failure(let error as CKError) = await Self.run(atomic, on: database) else {
                Issue.record("an atomic modify of 401 records succeeded")
                return
            }
            #expect(error.code == .limitExceeded)
            let lookedUp = try await database.records(for: [CKRecord.ID(recordName: "n1000", zoneID: Self.zoneID)])
            #expect((try? lookedUp.values.first?.get()) == nil)
        }
    }
}
