import Foundation
import NimbusCloudKit
import Testing

/// The per-item operations call their per-item block for each item, in the order asked
/// (a failed item too, with its error), then their result block once.
@Suite("Per-item callback order")
struct ItemOperationOrderTests {
    static func outcome<Value>(_ result: Result<Value, any Error>) -> String {
        switch result {
        case .success: return "ok"
        case .failure(let error as CKError): return "\(error.code)"
        case .failure(let error): return "\(error)"
        }
    }

    /// Runs `operation` on `database`; what `log` holds once it finished.
    static func events(of operation: CKDatabaseOperation, on database: CKDatabase, _ log: CallbackLog) async throws
        -> [String]
    {
        database.add(operation)
        try await finished(operation)
        return log.events
    }

    @Test func recordsAreFetchedInTheOrderAsked() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let ids = ["b", "missing", "a"].map { CKRecord.ID(recordName: $0) }
            _ = try await database.modifyRecords(
                saving: [CKRecord(recordType: "Note", recordID: ids[0]), CKRecord(recordType: "Note", recordID: ids[2])],
                deleting: [])
            let log = CallbackLog()
            let fetch = CKFetchRecordsOperation(recordIDs: ids)
            fetch.perRecordResultBlock = { id, result in log.append("\(id.recordName) \(Self.outcome(result))") }
            fetch.fetchRecordsResultBlock = { result in log.append("result \(Self.outcome(result))") }
            database.add(fetch)
            try await finished(fetch)
            #expect(log.events.dropLast() == ["b ok", "missing unknownItem", "a ok"])
            #expect(log.events.last?.hasPrefix("result ") == true)
        }
    }

    @Test func zonesAreSavedDeletedAndFetchedInTheOrderAsked() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let old = CKRecordZone.ID(zoneName: "Old")
            _ = try await database.save(CKRecordZone(zoneID: old))
            let log = CallbackLog()
            let names = ["Zeta", "Alpha"]
            let modify = CKModifyRecordZonesOperation(
                recordZonesToSave: names.map { CKRecordZone(zoneName: $0) }, recordZoneIDsToDelete: [old])
            modify.perRecordZoneSaveBlock = { id, result in log.append("save \(id.zoneName) \(Self.outcome(result))") }
            modify.perRecordZoneDeleteBlock = { id, result in log.append("delete \(id.zoneName) \(Self.outcome(result))") }
            modify.modifyRecordZonesResultBlock = { result in log.append("result \(Self.outcome(result))") }
            #expect(try await Self.events(of: modify, on: database, log) == ["save Zeta ok", "save Alpha ok", "delete Old ok", "result ok"])

            let fetchLog = CallbackLog()
            let fetch = CKFetchRecordZonesOperation(recordZoneIDs: [CKRecordZone.ID(zoneName: "Alpha"), old])
            fetch.perRecordZoneResultBlock = { id, result in fetchLog.append("\(id.zoneName) \(Self.outcome(result))") }
            fetch.fetchRecordZonesResultBlock = { result in fetchLog.append("result \(Self.outcome(result))") }
            #expect(try await Self.events(of: fetch, on: database, fetchLog) == ["Alpha ok", "Old zoneNotFound", "result partialFailure"])
        }
    }

    @Test func subscriptionsAreSavedDeletedAndFetchedInTheOrderAsked() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let inbox = CKRecordZone(zoneName: "Inbox")
            _ = try await database.save(inbox)
            _ = try await database.save(CKDatabaseSubscription(subscriptionID: "old"))
            let log = CallbackLog()
            let modify = CKModifySubscriptionsOperation(
                subscriptionsToSave: [
                    CKDatabaseSubscription(subscriptionID: "second"),
                    CKRecordZoneSubscription(zoneID: inbox.zoneID, subscriptionID: "first"),
                ],
                subscriptionIDsToDelete: ["old"])
            modify.perSubscriptionSaveBlock = { id, result in log.append("save \(id) \(Self.outcome(result))") }
            modify.perSubscriptionDeleteBlock = { id, result in log.append("delete \(id) \(Self.outcome(result))") }
            modify.modifySubscriptionsResultBlock = { result in log.append("result \(Self.outcome(result))") }
            #expect(try await Self.events(of: modify, on: database, log) == ["save second ok", "save first ok", "delete old ok", "result ok"])

            let fetchLog = CallbackLog()
            let fetch = CKFetchSubscriptionsOperation(subscriptionIDs: ["first", "old", "second"])
            fetch.perSubscriptionResultBlock = { id, result in fetchLog.append("\(id) \(Self.outcome(result))") }
            fetch.fetchSubscriptionsResultBlock = { result in fetchLog.append("result \(Self.outcome(result))") }
            #expect(try await Self.events(of: fetch, on: database, fetchLog) == ["first ok", "old unknownItem", "second ok", "result partialFailure"])
        }
    }
}
