import Foundation
import NimbusCloudKit
import Testing

/// Apps persist system fields, tokens, IDs and cursors with `NSKeyedArchiver` and secure
/// coding: these round trips must hold on every platform.
@Suite("Secure coding")
struct SecureCodingTests {
    @Test func systemFieldsOfAFetchedRecordRoundTripWithoutTheFields() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let zone = CKRecordZone(zoneName: "Notes")
            _ = try await database.save(zone)
            let note = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "n1", zoneID: zone.zoneID))
            note["title"] = "Groceries"
            let saved = try await database.save(note)
            let parentID = CKRecord.ID(recordName: "folder", zoneID: zone.zoneID)
            saved.setParent(parentID)

            let archiver = NSKeyedArchiver(requiringSecureCoding: true)
            saved.encodeSystemFields(with: archiver)
            archiver.finishEncoding()
            let unarchiver = try NSKeyedUnarchiver(forReadingFrom: archiver.encodedData)
            unarchiver.requiresSecureCoding = true
            let restored = try #require(CKRecord(coder: unarchiver))
            unarchiver.finishDecoding()

            #expect(restored.recordID == saved.recordID)
            #expect(restored.recordType == "Note")
            #expect(restored.recordChangeTag == saved.recordChangeTag)
            #expect(restored.recordChangeTag != nil)
            #expect(restored.creationDate == saved.creationDate)
            #expect(restored.modificationDate == saved.modificationDate)
            #expect(restored.parent?.recordID == parentID)
            #expect(restored.allKeys().isEmpty)
            #expect(restored.changedKeys().isEmpty)

            // Saving an edit of the restored record sends the changed key against the tag.
            restored["title"] = "Groceries (weekly)"
            let again = try await database.save(restored)
            #expect(again["title"] as? String == "Groceries (weekly)")
            #expect(again.recordChangeTag != saved.recordChangeTag)
        }
    }

    @Test func aWholeRecordArchivesWithItsFields() throws {
        let record = CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "n2"))
        record["title"] = "Tea"
        record["count"] = 3
        record["tags"] = ["a", "b"]
        let data = try NSKeyedArchiver.archivedData(withRootObject: record, requiringSecureCoding: true)
        let restored = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: CKRecord.self, from: data))
        #expect(restored["title"] as? String == "Tea")
        #expect(restored["count"] as? Int == 3)
        #expect(restored["tags"] as? [String] == ["a", "b"])
        #expect(restored.recordID.recordName == "n2")
    }

    @Test func idsAndReferencesRoundTrip() throws {
        let zoneID = CKRecordZone.ID(zoneName: "Shared", ownerName: "_owner")
        let id = CKRecord.ID(recordName: "r1", zoneID: zoneID)
        let data = try NSKeyedArchiver.archivedData(withRootObject: id, requiringSecureCoding: true)
        let restored = try NSKeyedUnarchiver.unarchivedObject(ofClass: CKRecord.ID.self, from: data)
        #expect(restored == id)
        #expect(restored?.zoneID.ownerName == "_owner")

        let reference = CKRecord.Reference(recordID: id, action: .deleteSelf)
        let referenceData = try NSKeyedArchiver.archivedData(withRootObject: reference, requiringSecureCoding: true)
        let restoredReference = try NSKeyedUnarchiver.unarchivedObject(ofClass: CKRecord.Reference.self, from: referenceData)
        #expect(restoredReference == reference)
        #expect(restoredReference?.action == .deleteSelf)
    }

    @Test func changeTokensRoundTripAndStillFetchOnlyNewChanges() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let zone = CKRecordZone(zoneName: "Notes")
            _ = try await database.save(zone)
            _ = try await database.save(CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "a", zoneID: zone.zoneID)))
            let first = try await database.recordZoneChanges(inZoneWith: zone.zoneID, since: nil)
            #expect(first.modificationResultsByID.count == 1)

            let data = try NSKeyedArchiver.archivedData(withRootObject: first.changeToken, requiringSecureCoding: true)
            let token = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: CKServerChangeToken.self, from: data))
            #expect(token == first.changeToken)

            _ = try await database.save(CKRecord(recordType: "Note", recordID: CKRecord.ID(recordName: "b", zoneID: zone.zoneID)))
            let next = try await database.recordZoneChanges(inZoneWith: zone.zoneID, since: token)
            #expect(next.modificationResultsByID.keys.map(\.recordName) == ["b"])
        }
    }

    /// A query cursor an app archived (to page on later) still continues the query.
    @Test func aQueryCursorRoundTripsAndStillContinuesTheQuery() async throws {
        try await CloudKitServer.with { server in
            let database = try await server.container(user: "ada").publicCloudDatabase
            try await saveOrdered(3, type: "Note", prefix: "n", in: database)
            let query = CKQuery(recordType: "Note", predicate: NSPredicate(format: "order >= %d", 0))
            query.sortDescriptors = [NSSortDescriptor(key: "order", ascending: true)]
            let (first, cursor) = try await database.records(matching: query, resultsLimit: 2)
            #expect(first.map { $0.0.recordName } == ["n0", "n1"])

            let data = try NSKeyedArchiver.archivedData(withRootObject: try #require(cursor), requiringSecureCoding: true)
            let restored = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: CKQueryOperation.Cursor.self, from: data))
            let (rest, end) = try await database.records(continuingMatchFrom: restored)
            #expect(rest.map { $0.0.recordName } == ["n2"])
            #expect(end == nil)
        }
    }
}
