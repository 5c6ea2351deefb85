import Foundation
import NimbusCloudKit
import NimbusTestSupport
import Testing

/// CloudKit's async database API against a real server.
@Suite("CKDatabase")
struct CKDatabaseTests {
    @Test(arguments: Engine.available)
    func recordsAreSavedFetchedAndDeletedWithCloudKitsValueTypes(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let record = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "n1"))
            record["title"] = "Groceries" as CKRecordValue
            record["count"] = 3
            record["done"] = true
            record["score"] = 2.5
            record["due"] = Date(timeIntervalSince1970: 1_700_000_000)
            record["tags"] = ["home", "weekly"]
            record["where"] = CLLocation(latitude: 48.85, longitude: 2.35)
            record.setObject(Data([1, 2, 3]) as CKRecordValue, forKey: "blob")
            #expect(Set(record.changedKeys()) == ["title", "count", "done", "score", "due", "tags", "where", "blob"])

            let saved = try await database.save(record)
            #expect(saved.recordChangeTag != nil)
            #expect(saved.changedKeys().isEmpty)

            let fetched = try await database.record(for: CKRecord.ID(recordName: "n1"))
            #expect(fetched["title"] as? String == "Groceries")
            #expect(fetched["count"] as? Int == 3)
            #expect(fetched["done"] as? Bool == true)
            #expect(fetched["score"] as? Double == 2.5)
            #expect(fetched["due"] as? Date == Date(timeIntervalSince1970: 1_700_000_000))
            #expect(fetched["tags"] as? [String] == ["home", "weekly"])
            #expect((fetched["where"] as? CLLocation)?.coordinate.latitude == 48.85)
            #expect(fetched.object(forKey: "blob") as? Data == Data([1, 2, 3]))
            let typed: String? = fetched["title"]
            #expect(typed == "Groceries")
            #expect(fetched.creatorUserRecordID != nil)

            #expect(try await database.deleteRecord(withID: fetched.recordID) == fetched.recordID)
            do {
                _ = try await database.record(for: fetched.recordID)
                Issue.record("a deleted record was fetched")
            } catch let error as CKError {
                #expect(error.code == .unknownItem)
            }
        }
    }

    @Test func zonesAreCreatedListedAndDeletedAndAMissingZoneIsZoneNotFound() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let (saved, _) = try await database.modifyRecordZones(saving: [CKRecordZone(zoneName: "A"), CKRecordZone(zoneName: "B")], deleting: [])
            #expect(saved.count == 2)
            let names = Set(try await database.allRecordZones().map(\.zoneID.zoneName))
            #expect(names.isSuperset(of: ["A", "B"]))
            #expect(try await database.deleteRecordZone(withID: CKRecordZone.ID(zoneName: "A")).zoneName == "A")

            let orphan = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "x", zoneID: CKRecordZone.ID(zoneName: "A")))
            do {
                _ = try await database.save(orphan)
                Issue.record("saved into a deleted zone")
            } catch CKError.zoneNotFound {
            }
        }
    }

    @Test(arguments: Engine.available)
    func queriesTranslatePredicatesAndSortAndPageWithACursor(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").publicCloudDatabase
            var records: [CKRecord] = []
            for index in 0..<5 {
                let record = CKRecord(recordType: "Item", recordID: CKRecord.ID(recordName: "i\(index)"))
                record["order"] = index
                record["name"] = index % 2 == 0 ? "even-\(index)" : "odd-\(index)"
                records.append(record)
            }
            _ = try await database.modifyRecords(saving: records, deleting: [])

            let query = CKQuery(recordType: "Item", predicate: NSPredicate(format: "order >= %d AND name BEGINSWITH %@", 1, "even"))
            query.sortDescriptors = [NSSortDescriptor(key: "order", ascending: false)]
            let (results, cursor) = try await database.records(matching: query)
            #expect(results.map(\.0.recordName) == ["i4", "i2"])
            #expect(cursor == nil)

            let all = CKQuery(recordType: "Item", predicate: NSPredicate(value: true))
            all.sortDescriptors = [NSSortDescriptor(key: "order", ascending: true)]
            let first = try await database.records(matching: all, resultsLimit: 2)
            #expect(first.matchResults.map(\.0.recordName) == ["i0", "i1"])
            let next = try await database.records(continuingMatchFrom: try #require(first.queryCursor), resultsLimit: 2)
            #expect(next.matchResults.map(\.0.recordName) == ["i2", "i3"])

            let within = CKQuery(recordType: "Item", predicate: NSPredicate(format: "name IN %@", ["odd-1", "odd-3"]))
            #expect(Set(try await database.records(matching: within).matchResults.map(\.0.recordName)) == ["i1", "i3"])

            let unsupported = CKQuery(recordType: "Item", predicate: NSPredicate(format: "name == 'a' OR name == 'b'"))
            do {
                _ = try await database.records(matching: unsupported)
                Issue.record("an OR query ran")
            } catch CKError.invalidArguments {
            }
        }
    }

    @Test func databaseChangesReportNewAndDeletedZones() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let start = try await database.databaseChanges(since: nil)
            _ = try await database.save(CKRecordZone(zoneName: "Fresh"))
            let created = try await database.databaseChanges(since: start.changeToken)
            #expect(created.modifications.map(\.zoneID.zoneName) == ["Fresh"])
            _ = try await database.deleteRecordZone(withID: CKRecordZone.ID(zoneName: "Fresh"))
            let deleted = try await database.databaseChanges(since: created.changeToken)
            #expect(deleted.deletions.map(\.zoneID.zoneName) == ["Fresh"])
        }
    }

    @Test func theCompletionHandlerAPIReportsOnce() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let record = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "h1"))
            let saved: CKRecord = try await withCheckedThrowingContinuation { continuation in
                database.save(record) { saved, error in
                    if let saved { continuation.resume(returning: saved) } else { continuation.resume(throwing: error!) }
                }
            }
            #expect(saved.recordChangeTag != nil)
            let missing: (any Error)? = await withCheckedContinuation { continuation in
                database.fetch(withRecordID: CKRecord.ID(recordName: "nope")) { _, error in continuation.resume(returning: error) }
            }
            #expect((missing as? CKError)?.code == .unknownItem)
        }
    }

    /// The completion-handler forms of the zone list and of a query.
    @Test func zonesAndQueriesAnswerThroughCompletionHandlers() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            _ = try await database.save(CKRecordZone(zoneName: "Errands"))
            try await saveOrdered(2, type: "Task", prefix: "t", in: database)
            let zones: [CKRecordZone] = try await withCheckedThrowingContinuation { continuation in
                database.fetchAllRecordZones { zones, error in
                    if let zones { continuation.resume(returning: zones) } else { continuation.resume(throwing: error!) }
                }
            }
            #expect(Set(zones.map(\.zoneID.zoneName)) == [CKRecordZone.ID.defaultZoneName, "Errands"])
            let query = CKQuery(recordType: "Task", predicate: NSPredicate(format: "order > %d", 0))
            let found: [CKRecord] = try await withCheckedThrowingContinuation { continuation in
                database.perform(query, inZoneWith: nil) { records, error in
                    if let records { continuation.resume(returning: records) } else { continuation.resume(throwing: error!) }
                }
            }
            #expect(found.map(\.recordID.recordName) == ["t1"])
        }
    }
}
