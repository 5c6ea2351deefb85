import Foundation
import NimbusCloudKit
import Testing

/// CloudKit's operations: callback order, dependencies across queues, cancellation.
@Suite("Operations")
struct OperationTests {
    @Test func modifyRecordsCallsPerItemBlocksThenTheResultBlockThenTheCompletionBlock() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            _ = try await database.save(CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "old")))
            let log = CallbackLog()
            let operation = CKModifyRecordsOperation(
                recordsToSave: [
                    CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "a")),
                    CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "b")),
                ],
                recordIDsToDelete: [CKRecord.ID(recordName: "old")])
            operation.perRecordSaveBlock = { id, result in
                log.append("save \(id.recordName) \((try? result.get()) != nil ? "ok" : "failed")")
            }
            operation.perRecordDeleteBlock = { id, result in
                log.append("delete \(id.recordName) \((try? result.get()) != nil ? "ok" : "failed")")
            }
            operation.modifyRecordsResultBlock = { result in
                log.append("result \((try? result.get()) != nil ? "ok" : "failed")")
            }
            operation.modifyRecordsCompletionBlock = { saved, deleted, error in
                log.append("legacy \(saved?.count ?? -1) \(deleted?.count ?? -1) \(error == nil)")
            }
            operation.completionBlock = { log.append("completion") }
            database.add(operation)
            try await finished(operation)
            try await log.waitForEntries(6)   // the completion block may run after the dependents
            #expect(log.events == ["save a ok", "save b ok", "delete old ok", "result ok", "legacy 2 1 true", "completion"])
        }
    }

    @Test func anOperationOnOneQueueWaitsForItsDependencyOnAnother() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let log = CallbackLog()
            let record = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "dep"))
            record["title"] = "saved first"
            let save = CKModifyRecordsOperation(recordsToSave: [record])
            save.database = database
            save.modifyRecordsResultBlock = { _ in log.append("saved") }
            let query = CKQueryOperation(query: CKQuery(recordType: "Note", predicate: NSPredicate(value: true)))
            query.database = database
            query.zoneID = .default
            query.recordMatchedBlock = { id, _ in log.append("matched \(id.recordName)") }
            query.queryResultBlock = { _ in log.append("query done") }
            query.addDependency(save)

            let first = OperationQueue()
            let second = OperationQueue()
            first.isSuspended = true
            second.addOperation(query)   // added first, on its own queue: must still wait
            first.addOperation(save)
            #expect(!query.isReady, "a dependency on another queue, not yet run, keeps the operation waiting")
            #expect(!query.isExecuting && !query.isFinished)
            #expect(log.events.isEmpty)
            first.isSuspended = false
            try await finished(query)
            #expect(log.events == ["saved", "matched dep", "query done"])
        }
    }

    @Test func anOperationCancelledBeforeItStartsReportsOperationCancelled() async throws {
        let log = CallbackLog()
        let operation = CKModifyRecordsOperation(recordsToSave: [CKRecord(recordType: "Note")])
        operation.database = CKContainer(identifier: "iCloud.none", connection: nil).privateCloudDatabase
        operation.perRecordSaveBlock = { _, _ in log.append("save") }
        operation.modifyRecordsResultBlock = { result in
            if case .failure(let error as CKError) = result { log.append("result \(error.code)") }
        }
        operation.cancel()
        let queue = OperationQueue()
        queue.addOperation(operation)
        try await finished(operation)
        #expect(log.events == ["result operationCancelled"])
    }

    /// A database operation without a database runs on its configuration's container's
    /// private database, or on its group's default configuration's, as in CloudKit.
    @Test func anOperationWithoutADatabaseUsesItsConfigurationsOrItsGroupsContainer() async throws {
        try await CloudKitServer.with { server in
            let ada = try await server.container(user: "ada")
            _ = try await ada.privateCloudDatabase.save(CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "mine")))
            let found = CallbackLog()
            let own = CKFetchRecordsOperation(recordIDs: [CKRecord.ID(recordName: "mine")])
            own.configuration.container = ada
            own.configuration.qualityOfService = .userInitiated
            own.perRecordResultBlock = { id, result in found.append("own \(id.recordName) \((try? result.get()) != nil)") }
            let group = CKOperationGroup()
            group.name = "Open the note"
            group.defaultConfiguration.container = ada
            let grouped = CKFetchRecordsOperation(recordIDs: [CKRecord.ID(recordName: "mine")])
            grouped.group = group
            grouped.perRecordResultBlock = { id, result in found.append("grouped \(id.recordName) \((try? result.get()) != nil)") }
            grouped.addDependency(own)
            let queue = OperationQueue()
            queue.addOperation(own)
            queue.addOperation(grouped)
            try await finished(grouped)
            #expect(found.events == ["own mine true", "grouped mine true"])
        }
    }

    @Test func aQueryOperationReportsEachMatchThenACursor() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").publicCloudDatabase
            try await saveOrdered(3, type: "Item", prefix: "q", in: database)
            let log = CallbackLog()
            let query = CKQuery(recordType: "Item", predicate: NSPredicate(format: "order < %d", 10))
            query.sortDescriptors = [NSSortDescriptor(key: "order", ascending: true)]
            let operation = CKQueryOperation(query: query)
            operation.resultsLimit = 2
            operation.recordMatchedBlock = { id, _ in log.append(id.recordName) }
            let cursor = Locked<CKQueryOperation.Cursor?>(nil)
            operation.queryResultBlock = { result in
                if case .success(let next) = result { cursor.set(next) }
                log.append("done")
            }
            database.add(operation)
            try await finished(operation)
            #expect(log.events == ["q0", "q1", "done"])

            let next = CKQueryOperation(cursor: try #require(cursor.get()))
            next.recordMatchedBlock = { id, _ in log.append(id.recordName) }
            database.add(next)
            try await finished(next)
            #expect(log.events.suffix(1) == ["q2"])
        }
    }
}

/// Returns once `operation` has finished (failing after 30 s): an operation that depends on
/// it, on a queue of its own, runs then. Nothing polls; no thread of the cooperative pool (which
/// the operation's own work needs) is blocked.
func finished(_ operation: Operation) async throws {
    try await withTimeout(seconds: 30) {
        await withCheckedContinuation { continuation in
            let queue = OperationQueue()
            let done = BlockOperation { continuation.resume() }
            done.addDependency(operation)
            queue.addOperation(done)
        }
    }
}
