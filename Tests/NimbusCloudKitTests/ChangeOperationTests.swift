import Foundation
import NimbusCloudKit
import Testing

/// The change-feed operations: pages, token callbacks and their order.
@Suite("Change operations")
struct ChangeOperationTests {
    @Test func zoneChangesArriveRecordsFirstThenTokensThenTheZoneResultThenTheFinalResult() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let zone = CKRecordZone(zoneName: "Notes")
            _ = try await database.save(zone)
            let records = (0..<3).map { CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "r\($0)", zoneID: zone.zoneID)) }
            _ = try await database.modifyRecords(saving: records, deleting: [])
            _ = try await database.deleteRecord(withID: records[2].recordID)

            let log = CallbackLog()
            let configuration = CKFetchRecordZoneChangesOperation.ZoneConfiguration(resultsLimit: 1)
            let operation = CKFetchRecordZoneChangesOperation(
                recordZoneIDs: [zone.zoneID, CKRecordZone.ID(zoneName: "Missing")],
                configurationsByRecordZoneID: [zone.zoneID: configuration])
            operation.recordWasChangedBlock = { id, _ in log.append("changed \(id.recordName)") }
            operation.recordWithIDWasDeletedBlock = { id, type in log.append("deleted \(id.recordName) \(type)") }
            operation.recordZoneChangeTokensUpdatedBlock = { zoneID, token, _ in
                log.append("token \(zoneID.zoneName) \(token != nil)")
            }
            operation.recordZoneFetchResultBlock = { zoneID, result in
                switch result {
                case .success(let outcome): log.append("zone \(zoneID.zoneName) moreComing=\(outcome.moreComing)")
                case .failure(let error): log.append("zone \(zoneID.zoneName) \((error as? CKError)?.code.description ?? "?")")
                }
            }
            operation.fetchRecordZoneChangesResultBlock = { result in
                if case .failure(let error as CKError) = result { log.append("result \(error.code)") }
            }
            database.add(operation)
            try await finished(operation)

            let events = log.events
            #expect(Set(events.filter { $0.hasPrefix("changed") }) == ["changed r0", "changed r1"])
            #expect(events.filter { $0.hasPrefix("token Notes") }.count >= 1)
            let zoneEnd = try #require(events.firstIndex(of: "zone Notes moreComing=false"))
            #expect(events[..<zoneEnd].allSatisfy { !$0.hasPrefix("zone") })
            #expect(events.suffix(2) == ["zone Missing zoneNotFound", "result partialFailure"])
        }
    }

    @Test func databaseChangesReportChangedAndDeletedZonesThenTheToken() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            _ = try await database.modifyRecordZones(saving: [CKRecordZone(zoneName: "A"), CKRecordZone(zoneName: "B")], deleting: [])
            _ = try await database.deleteRecordZone(withID: CKRecordZone.ID(zoneName: "B"))
            let log = CallbackLog()
            let token = Locked<CKServerChangeToken?>(nil)
            let operation = CKFetchDatabaseChangesOperation(previousServerChangeToken: nil)
            operation.recordZoneWithIDChangedBlock = { log.append("changed \($0.zoneName)") }
            operation.recordZoneWithIDWasDeletedBlock = { log.append("deleted \($0.zoneName)") }
            operation.fetchDatabaseChangesResultBlock = { result in
                if case .success(let outcome) = result { token.set(outcome.serverChangeToken) }
                log.append("result")
            }
            database.add(operation)
            try await finished(operation)
            #expect(log.events.contains("changed A"))
            #expect(!log.events.contains("changed B"))
            #expect(log.events.last == "result")
            #expect(token.get() != nil)
        }
    }
}
