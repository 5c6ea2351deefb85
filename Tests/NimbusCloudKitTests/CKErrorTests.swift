import Foundation
import NimbusCloudKit
import NimbusServer
import NimbusStore
import Testing

@Suite("CKError")
struct CKErrorTests {
    @Test func codesHaveCloudKitsRawValues() {
        #expect(CKError.Code.internalError.rawValue == 1)
        #expect(CKError.Code.partialFailure.rawValue == 2)
        #expect(CKError.Code.unknownItem.rawValue == 11)
        #expect(CKError.Code.serverRecordChanged.rawValue == 14)
        #expect(CKError.Code.operationCancelled.rawValue == 20)
        #expect(CKError.Code.changeTokenExpired.rawValue == 21)
        #expect(CKError.Code.zoneNotFound.rawValue == 26)
        #expect(CKError.Code.accountTemporarilyUnavailable.rawValue == 36)
        #expect(CKError.Code.allCases.count == 37)
    }

    @Test func bridgesToNSErrorWithCloudKitsDomainCodeAndKeys() {
        let error = CKError(.requestRateLimited, userInfo: [CKErrorRetryAfterKey: NSNumber(value: 2.5)])
        let nsError = error as NSError
        #expect(nsError.domain == CKErrorDomain)
        #expect(nsError.code == 7)
        #expect((nsError.userInfo[CKErrorRetryAfterKey] as? NSNumber)?.doubleValue == 2.5)
        #expect(error.retryAfterSeconds == 2.5)
    }

    @Test func catchClausesMatchCodes() {
        func classify(_ error: any Error) -> String {
            do { throw error } catch CKError.zoneNotFound { return "zone" } catch { return "other" }
        }
        #expect(classify(CKError(.zoneNotFound)) == "zone")
        #expect(classify(CKError(.unknownItem)) == "other")
    }

    @Test func aConflictCarriesTheThreeRecordsUnderCloudKitsKeys() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let original = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "c1"))
            original["title"] = "v1"
            let saved = try await database.save(original)

            let mine = saved.copy() as! CKRecord
            let theirs = saved.copy() as! CKRecord
            theirs["title"] = "theirs"
            _ = try await database.save(theirs)
            mine["title"] = "mine"
            do {
                _ = try await database.save(mine)
                Issue.record("a stale save succeeded")
            } catch let error as CKError {
                #expect(error.code == .serverRecordChanged)
                #expect(error.serverRecord?["title"] as? String == "theirs")
                #expect(error.clientRecord?["title"] as? String == "mine")
                #expect(error.ancestorRecord?["title"] as? String == "v1")
                let info = (error as NSError).userInfo
                #expect((info[CKRecordChangedErrorServerRecordKey] as? CKRecord)?["title"] as? String == "theirs")
                #expect(info[CKRecordChangedErrorClientRecordKey] is CKRecord)
                #expect(info[CKRecordChangedErrorAncestorRecordKey] is CKRecord)
                #expect(!error.localizedDescription.isEmpty)
            }
        }
    }

    @Test func aBatchWithFailedItemsReportsPartialFailureKeyedByRecordID() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let saved = try await database.save(CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "p1")))
            let stale = saved.copy() as! CKRecord
            let fresh = saved.copy() as! CKRecord
            fresh["title"] = "moved on"
            _ = try await database.save(fresh)
            stale["title"] = "stale"
            let other = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "p2"))

            let operation = CKModifyRecordsOperation(recordsToSave: [stale, other])
            operation.isAtomic = false
            let result = Locked<Result<Void, any Error>?>(nil)
            operation.modifyRecordsResultBlock = { outcome in result.set(outcome) }
            database.add(operation)
            try await finished(operation)

            guard case .failure(let error as CKError)? = result.get() else {
                Issue.record("expected a partial failure, got \(String(describing: result.get()))")
                return
            }
            #expect(error.code == .partialFailure)
            let partial = try #require((error as NSError).userInfo[CKPartialErrorsByItemIDKey] as? [AnyHashable: any Error])
            #expect(partial.count == 1)
            #expect((partial[stale.recordID] as? CKError)?.code == .serverRecordChanged)
        }
    }

    /// The server throttles a user (429 `THROTTLED` with `retryAfter`): the error is
    /// `requestRateLimited`, with the wait as `retryAfterSeconds` and under `CKErrorRetryAfterKey`.
    @Test func aThrottledRequestIsRequestRateLimitedWithTheServersRetryAfter() async throws {
        try await CloudKitServer.with(configure: {
            $0.throttle.defaults.userRate = 0.01  // one request every 100 s
            $0.throttle.defaults.userBurst = 1
        }) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            _ = try await database.allRecordZones()
            do {
                _ = try await database.allRecordZones()
                Issue.record("a request over the user's rate was answered")
            } catch let error as CKError {
                #expect(error.code == .requestRateLimited)
                let wait = try #require(error.retryAfterSeconds)
                #expect(wait > 90 && wait <= 100)
                #expect(((error as NSError).userInfo[CKErrorRetryAfterKey] as? NSNumber)?.doubleValue == wait)
                #expect(error.localizedDescription.contains("retry"), "\(error.localizedDescription)")
            }
        }
    }
}
