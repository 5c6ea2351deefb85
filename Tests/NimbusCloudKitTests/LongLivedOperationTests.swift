import Foundation
import NimbusCloudKit
import Testing

/// Long-lived operations, as far as one process honours them: listed by their container
/// from when they start until they finish, handed back running, never outliving the process.
@Suite("Long-lived operations")
struct LongLivedOperationTests {
    @Test func aLongLivedOperationIsListedWhileItRunsAndHandedBackRunning() async throws {
        try await CloudKitServer.with { server in
            let container = try await server.container(user: "ada")
            #expect(try await container.allLongLivedOperationIDs().isEmpty)

            let operation = CKModifyRecordsOperation(recordsToSave: [CKRecord(recordType: "Note")])
            operation.configuration.isLongLived = true
            let log = CallbackLog()
            let (persisted, persistedNow) = AsyncStream<Void>.makeStream()
            let (finished, finishedNow) = AsyncStream<Void>.makeStream()
            // The persisted block runs on the queue's thread before any request: it holds the
            // operation there until the test has looked.
            let release = DispatchSemaphore(value: 0)
            defer { release.signal() }
            operation.longLivedOperationWasPersistedBlock = {
                log.append("persisted")
                persistedNow.yield()
                release.wait()
            }
            operation.completionBlock = { finishedNow.yield() }
            container.add(operation)
            try await withTimeout { for await _ in persisted { break } }

            #expect(try await container.allLongLivedOperationIDs() == [operation.operationID])
            #expect(try await container.longLivedOperation(for: operation.operationID) === operation)
            container.add(operation)   // running already: nothing happens
            operation.modifyRecordsResultBlock = { result in log.append("result \((try? result.get()) != nil)") }
            release.signal()
            try await withTimeout { for await _ in finished { break } }
            #expect(log.events == ["persisted", "result true"])
            #expect(try await container.allLongLivedOperationIDs().isEmpty)
            #expect(try await container.longLivedOperation(for: operation.operationID) == nil)

            // An operation that is not long-lived is never listed, and has no persisted block call.
            let ordinary = CKModifyRecordsOperation(recordsToSave: [CKRecord(recordType: "Note")])
            ordinary.longLivedOperationWasPersistedBlock = { log.append("ordinary persisted") }
            let (ordinaryFinished, ordinaryFinishedNow) = AsyncStream<Void>.makeStream()
            ordinary.completionBlock = { ordinaryFinishedNow.yield() }
            container.add(ordinary)
            try await withTimeout { for await _ in ordinaryFinished { break } }
            #expect(try await container.allLongLivedOperationIDs().isEmpty)
            #expect(!log.events.contains("ordinary persisted"))
        }
    }
}
