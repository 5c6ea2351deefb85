import Foundation
import Nimbus
import Testing

@Suite("Operations")
struct OperationTests {
    let zone = ZoneID(zoneName: "ReadingList")

    @Test func perItemCallbacksComeBeforeTheFinalPartialFailure() async throws {
        let transport = TestTransport(responses: [
            .json([
                "records": [
                    serverRecordJSON("ok", zone: "ReadingList"),
                    wireError(.conflict, "changed", recordName: "stale"),
                ]
            ])
        ])
        let log = EventLog()
        let ok = Record(recordType: "T", recordID: Record.ID(recordName: "ok", zoneID: zone))
        let stale = Record(recordType: "T", recordID: Record.ID(recordName: "stale", zoneID: zone))
        let operation = ModifyRecordsOperation(recordsToSave: [ok, stale])
        operation.database = makeContainer(transport).privateCloudDatabase
        operation.isAtomic = false
        operation.perRecordSaveBlock = { id, result in
            log.append("\(id.recordName):\((try? result.get()) != nil ? "saved" : "failed")")
        }
        operation.progressBlock = { done, total in log.append("progress \(done)/\(total ?? -1)") }
        let final = Locked<NimbusError?>(nil)
        operation.modifyRecordsResultBlock = { result in
            if case .failure(let error) = result { final.withLock { $0 = error } }
            log.append("done")
        }
        OperationQueue().addOperation(operation)
        try await log.wait(forCount: 5)

        #expect(log.events == ["progress 0/2", "ok:saved", "stale:failed", "progress 2/2", "done"])
        let error = try #require(final.withLock { $0 })
        #expect(error.code == .partialFailure)
        #expect(error.partialErrorsByItemID.count == 1)
        #expect(error.partialError(for: stale.id)?.code == .serverRecordChanged)
        #expect(operation.error?.code == .partialFailure)
        #expect(transport.bodies.first?["atomic"] == false)
    }

    @Test func dependenciesWorkAcrossQueues() async throws {
        let log = EventLog()
        let transport = TestTransport { request in
            log.append("request \(request.url.lastPathComponent)")
            if request.url.path.hasSuffix("zones/modify") {
                return .json(["zones": [["zoneID": ["zoneName": "ReadingList"], "atomic": true]]])
            }
            return .json(["records": [serverRecordJSON("r1", zone: "ReadingList")]])
        }
        let database = makeContainer(transport).privateCloudDatabase
        let createZone = ModifyRecordZonesOperation(recordZonesToSave: [RecordZone(zoneID: zone)])
        createZone.modifyRecordZonesResultBlock = { _ in log.append("zone created") }
        let fetch = FetchRecordsOperation(recordIDs: [Record.ID(recordName: "r1", zoneID: zone)])
        fetch.fetchRecordsResultBlock = { _ in log.append("fetched") }
        for operation in [createZone, fetch] as [DatabaseOperation] { operation.database = database }
        fetch.addDependency(createZone)

        let first = OperationQueue()
        let second = OperationQueue()
        second.addOperation(fetch)  // enqueued first, on another queue: must still wait
        first.addOperation(createZone)
        try await log.wait(forCount: 4)
        #expect(log.events == ["request modify", "zone created", "request lookup", "fetched"])
    }

    @Test(arguments: [1, OperationQueue.defaultMaxConcurrentOperationCount])
    func serialChainHoldsLaterOperationsBehindAHeldOne(maxConcurrent: Int) async throws {
        let log = EventLog()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = maxConcurrent
        let held = BlockOperation { log.append("held") }
        let op1 = BlockOperation { log.append("op1") }
        let op2 = BlockOperation { log.append("op2") }
        let op3 = BlockOperation { log.append("op3") }
        op2.addDependency(held)  // op2 is held back by something outside the chain

        SerialOperationChain().add([op1, op2, op3], to: queue)
        try await log.wait(forCount: 1)
        #expect(log.events == ["op1"])
        // op3 cannot start: it waits for op2, which waits for `held`.
        #expect(!op2.isReady && !op3.isReady)
        #expect(!op3.isExecuting && !op3.isFinished)

        OperationQueue().addOperation(held)  // release, from another queue
        try await log.wait(forCount: 4)
        #expect(log.events == ["op1", "held", "op2", "op3"])
    }

    @Test func aSerialQueueAloneLetsALaterOperationJumpAhead() async throws {
        // The trap the chain avoids: maxConcurrentOperationCount = 1 is not an order.
        let log = EventLog()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let held = BlockOperation { log.append("held") }
        let op1 = BlockOperation { log.append("op1") }
        let op2 = BlockOperation { log.append("op2") }
        let op3 = BlockOperation { log.append("op3") }
        op2.addDependency(held)
        for operation in [op1, op2, op3] { queue.addOperation(operation) }
        try await log.wait(forCount: 2)
        #expect(log.events == ["op1", "op3"])
        queue.addOperation(held)
        try await log.wait(forCount: 4)
    }

    @Test func chainThatStopsOnFailureSkipsTheRest() async throws {
        let transport = TestTransport(responses: [.error(.zoneNotFound)])
        let database = makeContainer(transport).privateCloudDatabase
        let log = EventLog()
        let fetch = FetchRecordZoneChangesOperation(recordZoneIDs: [zone])
        fetch.fetchRecordZoneChangesResultBlock = { result in
            log.append("fetch: \((try? result.get()) != nil ? "ok" : "failed")")
        }
        let save = ModifyRecordsOperation(recordsToSave: [Record(recordType: "T", recordID: Record.ID(zoneID: zone))])
        let saveError = Locked<NimbusError?>(nil)
        save.modifyRecordsResultBlock = { result in
            if case .failure(let error) = result { saveError.withLock { $0 = error } }
            log.append("save done")
        }
        for operation in [fetch, save] as [DatabaseOperation] { operation.database = database }
        SerialOperationChain(stopsOnFailure: true).add([fetch, save], to: OperationQueue())
        try await log.wait(forCount: 2)

        #expect(log.events == ["fetch: failed", "save done"])
        #expect(saveError.withLock { $0 }?.code == .batchRequestFailed)
        #expect(transport.operations == ["records/changes"])  // the save sent nothing
    }

    @Test func cancellingAGroupCancelsRunningPendingAndLaterOperations() async throws {
        let transport = HangingTransport()
        let database = makeContainer(transport).privateCloudDatabase
        let log = EventLog()
        let group = OperationGroup(name: "sync")
        func fetch(_ name: String) -> FetchRecordsOperation {
            let operation = FetchRecordsOperation(recordIDs: [Record.ID(recordName: name)])
            operation.database = database
            operation.group = group
            operation.fetchRecordsResultBlock = { result in
                if case .failure(let error) = result { log.append("\(name): \(error.code)") }
            }
            return operation
        }
        let running = fetch("running")
        let pending = fetch("pending")
        let queue = OperationQueue()
        SerialOperationChain().add([running, pending], to: queue)
        try await transport.started.next("the first request")
        #expect(group.operations.count == 2)

        group.cancel()
        try await transport.cancelled.next("the request's cancellation")
        try await log.wait(forCount: 2)
        #expect(Set(log.events) == ["running: operationCancelled", "pending: operationCancelled"])

        let late = fetch("late")
        queue.addOperation(late)
        try await log.wait(forCount: 3)
        #expect(log.events.last == "late: operationCancelled")
        #expect(group.isCancelled)
    }

    @Test func zoneChangesOperationPagesReportsTokensAndPerZoneFailures() async throws {
        let other = ZoneID(zoneName: "ReadingHistory")
        let transport = TestTransport { request in
            let body = try JSON.parse(Array(request.body!))
            if body["zoneID"]?["zoneName"] == "ReadingHistory" { return .error(.changeTokenExpired) }
            if body["syncToken"] == nil {
                return .json([
                    "records": [serverRecordJSON("a", zone: "ReadingList"), serverRecordJSON("b", zone: "ReadingList")],
                    "syncToken": "page1", "moreComing": true,
                ])
            }
            return .json([
                "records": [["recordName": "a", "deleted": true]], "syncToken": "page2", "moreComing": false,
            ])
        }
        let log = EventLog()
        let operation = FetchRecordZoneChangesOperation(recordZoneIDs: [zone, other])
        operation.database = makeContainer(transport).privateCloudDatabase
        operation.recordWasChangedBlock = { id, _ in log.append("changed \(id.recordName)") }
        operation.recordWithIDWasDeletedBlock = { id, _ in log.append("deleted \(id.recordName)") }
        operation.recordZoneChangeTokensUpdatedBlock = { zone, token in log.append("token \(zone.zoneName) \(token)") }
        operation.recordZoneFetchResultBlock = { zone, result in
            switch result {
            case .success(let outcome): log.append("zone \(zone.zoneName) \(outcome.serverChangeToken) \(outcome.moreComing)")
            case .failure(let error): log.append("zone \(zone.zoneName) \(error.code)")
            }
        }
        let final = Locked<NimbusError?>(nil)
        operation.fetchRecordZoneChangesResultBlock = { result in
            if case .failure(let error) = result { final.withLock { $0 = error } }
            log.append("done")
        }
        OperationQueue().addOperation(operation)
        try await log.wait(forCount: 7)

        #expect(log.events == [
            "changed a", "changed b", "token ReadingList ServerChangeToken(page1)", "deleted a",
            "zone ReadingList ServerChangeToken(page2) false", "zone ReadingHistory changeTokenExpired", "done",
        ])
        #expect(transport.bodies[1]["syncToken"] == "page1")
        let error = try #require(final.withLock { $0 })
        #expect(error.partialErrorsByItemID[.zone(other)]?.code == .changeTokenExpired)
    }

    @Test func databaseChangesOperationReportsChangedAndDeletedZones() async throws {
        let transport = TestTransport(responses: [
            .json([
                "zones": [["zoneID": ["zoneName": "A"]], ["zoneID": ["zoneName": "B"], "deleted": true]],
                "syncToken": "d1", "moreComing": true,
            ]),
            .json(["zones": [["zoneID": ["zoneName": "C"], "purged": true]], "syncToken": "d2", "moreComing": false]),
        ])
        let log = EventLog()
        let operation = FetchDatabaseChangesOperation()
        operation.database = makeContainer(transport).privateCloudDatabase
        operation.recordZoneWithIDChangedBlock = { log.append("changed \($0.zoneName)") }
        operation.recordZoneWithIDWasDeletedBlock = { log.append("deleted \($0.zoneName)") }
        operation.recordZoneWithIDWasPurgedBlock = { log.append("purged \($0.zoneName)") }
        operation.changeTokenUpdatedBlock = { log.append("token \($0)") }
        operation.fetchDatabaseChangesResultBlock = { result in
            log.append("done \((try? result.get().serverChangeToken).map { "\($0)" } ?? "failed")")
        }
        OperationQueue().addOperation(operation)
        try await log.wait(forCount: 5)
        #expect(log.events == [
            "changed A", "deleted B", "token ServerChangeToken(d1)", "purged C", "done ServerChangeToken(d2)",
        ])
        #expect(transport.operations == ["changes/database", "changes/database"])
    }

    @Test func queryOperationReportsMatchesAndContinuesFromItsCursor() async throws {
        let transport = TestTransport { request in
            let body = try JSON.parse(Array(request.body!))
            if body["continuationMarker"] == nil {
                return .json(["records": [serverRecordJSON("a"), serverRecordJSON("b")], "continuationMarker": "m1"])
            }
            return .json(["records": [serverRecordJSON("c")]])
        }
        let database = makeContainer(transport).publicCloudDatabase
        let log = EventLog()
        let cursor = Locked<QueryCursor?>(nil)
        let first = QueryOperation(query: Query(recordType: "Bookmark", filters: [.beginsWith("title", "Swift")]))
        first.database = database
        first.resultsLimit = 2
        first.recordMatchedBlock = { id, _ in log.append("match \(id.recordName)") }
        first.queryResultBlock = { result in
            cursor.withLock { $0 = try? result.get() }
            log.append("page done")
        }
        OperationQueue().addOperation(first)
        try await log.wait(forCount: 3)
        let next = try #require(cursor.withLock { $0 })

        let second = QueryOperation(cursor: next)
        second.database = database
        second.recordMatchedBlock = { id, _ in log.append("match \(id.recordName)") }
        second.queryResultBlock = { result in
            log.append((try? result.get()) == .some(nil) ? "no more" : "more?")
        }
        OperationQueue().addOperation(second)
        try await log.wait(forCount: 5)

        #expect(log.events == ["match a", "match b", "page done", "match c", "no more"])
        #expect(transport.operations == ["records/query", "records/query"])
        #expect(transport.bodies[0]["zoneWide"] == true)
        #expect(transport.bodies[0]["resultsLimit"] == 2)
        #expect(transport.bodies[1]["continuationMarker"] == "m1")
        #expect(transport.bodies[1]["query"] == transport.bodies[0]["query"])
    }

    @Test func anOperationWithoutADatabaseFailsClearly() async throws {
        let log = EventLog()
        let operation = FetchRecordsOperation(recordIDs: [Record.ID()])
        operation.fetchRecordsResultBlock = { result in
            if case .failure(let error) = result { log.append(error.code.rawValue) }
        }
        OperationQueue().addOperation(operation)
        try await log.wait(forCount: 1)
        #expect(log.events == ["invalidArguments"])
    }
}
