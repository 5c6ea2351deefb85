import Foundation
import Nimbus
import Testing

@Suite("Cancellation")
struct CancellationTests {
    @Test func cancellingTheTaskCancelsTheRequest() async throws {
        let transport = HangingTransport()
        let database = makeContainer(transport).privateCloudDatabase
        let task = Task { try await database.record(for: Record.ID(recordName: "r1")) }
        try await transport.started.next("the request")
        task.cancel()
        try await transport.cancelled.next("the request's cancellation")
        let error = try await #require(throws: NimbusError.self) { try await withTimeout { try await task.value } }
        #expect(error.code == .operationCancelled)
    }

    @Test func aCancelledTaskSendsNothing() async throws {
        let transport = TestTransport(responses: [.json(["zones": []])])
        let database = makeContainer(transport).privateCloudDatabase
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await database.allRecordZones()
        }
        await #expect(throws: NimbusError.self) { try await task.value }
        #expect(transport.requests.isEmpty)
    }

    @Test func cancellingAnOperationCancelsItsRequest() async throws {
        let transport = HangingTransport()
        let log = EventLog()
        let operation = ModifyRecordsOperation(recordsToSave: [Record(recordType: "T")])
        operation.database = makeContainer(transport).privateCloudDatabase
        operation.perRecordSaveBlock = { _, _ in log.append("item") }
        operation.modifyRecordsResultBlock = { result in
            if case .failure(let error) = result { log.append("done: \(error.code)") }
        }
        OperationQueue().addOperation(operation)
        try await transport.started.next("the request")
        operation.cancel()
        try await transport.cancelled.next("the request's cancellation")
        try await log.wait(forCount: 1)
        #expect(log.events == ["done: operationCancelled"])
        #expect(operation.isCancelled)
    }

    @Test func anOperationCancelledBeforeItStartsSendsNothing() async throws {
        let transport = TestTransport(responses: [.json(["records": []])])
        let log = EventLog()
        let operation = FetchRecordsOperation(recordIDs: [Record.ID()])
        operation.database = makeContainer(transport).privateCloudDatabase
        operation.fetchRecordsResultBlock = { result in
            if case .failure(let error) = result { log.append(error.code.rawValue) }
        }
        operation.cancel()
        OperationQueue().addOperation(operation)
        try await log.wait(forCount: 1)
        #expect(log.events == ["operationCancelled"])
        #expect(transport.requests.isEmpty)
    }

    @Test func stoppingPagingStopsFetching() async throws {
        let transport = TestTransport(responses: [.json(["records": [], "syncToken": "s", "moreComing": true])])
        let database = makeContainer(transport).privateCloudDatabase
        var pages = 0
        for try await _ in database.allRecordZoneChanges(inZoneWith: ZoneID(zoneName: "Z"), since: nil) {
            pages += 1
            if pages == 3 { break }
        }
        #expect(transport.requests.count == 3)
    }
}

@Suite("Cancellation over HTTP")
struct HTTPCancellationTests {
    @Test func cancellingTheTaskAbortsARequestTheServerNeverAnswers() async throws {
        let server = try SilentServer()
        defer { server.stop() }
        let container = makeContainer(HTTPClientTransport(), baseURL: "http://127.0.0.1:\(server.port)")
        let task = Task { try await container.privateCloudDatabase.allRecordZones() }
        try await server.requestReceived.next("the request at the server")
        task.cancel()
        let error = try await #require(throws: NimbusError.self) { try await withTimeout { try await task.value } }
        #expect(error.code == .operationCancelled)
    }
}
