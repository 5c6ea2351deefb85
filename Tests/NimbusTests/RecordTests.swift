import Foundation
import Nimbus
import Testing

@Suite("Record")
struct RecordTests {
    @Test func typedSubscriptsRoundTripEveryValueType() {
        var record = Record(recordType: "Bookmark")
        let date = Date(timeIntervalSince1970: 1_700_000_000.123)
        let location = Location(latitude: 52.5, longitude: 13.4)
        let reference = Reference(recordID: Record.ID(recordName: "article-1"), action: .deleteSelf)
        record["title"] = "Swift on the server"
        record["count"] = 3
        record["big"] = Int64.max
        record["ratio"] = 0.25
        record["read"] = true
        record["addedAt"] = date
        record["blob"] = Data([1, 2, 3])
        record["where"] = location
        record["article"] = reference
        record["tags"] = ["swift", "server"]
        record["scores"] = [1.5, 2.5]

        #expect(record["title"] == "Swift on the server")
        #expect(record["count"] == 3)
        #expect(record["big"] == Int64.max)
        #expect(record["ratio"] == 0.25)
        #expect(record["read"] == true)
        #expect(record["addedAt"] == Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(record["blob"] == Data([1, 2, 3]))
        #expect(record["where"] == location)
        #expect(record["article"] == reference)
        #expect(record["tags"] == ["swift", "server"])
        #expect(record["scores"] == [1.5, 2.5])
        #expect(record.fieldValue(forKey: "read") == .int64(1))
        #expect(record.fieldValue(forKey: "tags")?.type == .stringList)
        // The nearest whole millisecond, and the date itself exactly.
        #expect(record.fieldValue(forKey: "addedAt")?.timestampValue == 1_700_000_000_123)
        #expect(record.fieldValue(forKey: "addedAt") == date.fieldValue)
    }

    @Test func readingAsTheWrongTypeGivesNil() {
        var record = Record(recordType: "Bookmark")
        record["title"] = "x"
        let asInt: Int? = record["title"]
        let missing: String? = record["nope"]
        #expect(asInt == nil)
        #expect(missing == nil)
    }

    @Test func changedKeysTrackSetsRemovalsAndReverts() async throws {
        var record = try await fetchedRecord(fields: ["title": "Old", "note": "n"])
        #expect(record.changedKeys.isEmpty)

        record["title"] = "New"
        record["note"] = nil as String?
        record["added"] = 1
        #expect(record.changedKeys == ["added", "note", "title"])

        record["title"] = "Old"  // back to the server's value: no longer a change
        #expect(record.changedKeys == ["added", "note"])

        record["title"] = "Old"  // setting the same value is not a change
        #expect(record.changedKeys == ["added", "note"])
    }

    @Test func ancestorIsTheServerCopyBeforeLocalChanges() async throws {
        var record = try await fetchedRecord(fields: ["title": "Old", "note": "n"])
        record["title"] = "New"
        record["note"] = nil as String?
        record["added"] = 1

        let ancestor = try #require(record.ancestorRecord)
        #expect(ancestor["title"] == "Old")
        #expect(ancestor["note"] == "n")
        #expect(ancestor.fieldValue(forKey: "added") == nil)
        #expect(ancestor.changedKeys.isEmpty)
        #expect(ancestor.recordChangeTag == record.recordChangeTag)
        #expect(Record(recordType: "New").ancestorRecord == nil)
    }

    @Test func systemFieldsRoundTripWithoutFields() async throws {
        let zone = ZoneID(zoneName: "ReadingList", ownerRecordName: "_u1")
        var record = try await fetchedRecord(fields: ["title": "T"], zone: zone)
        record["title"] = "changed locally"

        let data = record.encodeSystemFields()
        let decoded = try Record(systemFieldsData: data)

        #expect(decoded.id == record.id)
        #expect(decoded.recordType == "Bookmark")
        #expect(decoded.recordChangeTag == "t7")
        #expect(decoded.creationDate == record.creationDate)
        #expect(decoded.modificationDate == record.modificationDate)
        #expect(decoded.creatorUserRecordName == "_u1")
        #expect(decoded.lastModifiedDeviceID == "device-B")
        #expect(decoded.allKeys.isEmpty)
        #expect(decoded.changedKeys.isEmpty)
        // The data is JSON: it names no field values.
        #expect(!String(decoding: data, as: UTF8.self).contains("changed locally"))
    }

    @Test func systemFieldsAreTheSortedCompactJSONOfTheSystemMembers() async throws {
        // Written straight to bytes: exactly what serializing the members as a JSON tree gives.
        let record = try await fetchedRecord(fields: ["title": "T"], zone: ZoneID(zoneName: "ReadingList", ownerRecordName: "_u1"))
        let full: JSON = [
            "v": 1, "recordName": "r1", "recordType": "Bookmark", "recordChangeTag": "t7",
            "zoneID": ["zoneName": "ReadingList", "ownerRecordName": "_u1"],
            "created": ["timestamp": 1_700_000_000_000, "userRecordName": "_u1"],
            "modified": ["timestamp": 1_700_000_001_000, "userRecordName": "_u1", "deviceID": "device-B"],
        ]
        #expect(String(decoding: record.encodeSystemFields(), as: UTF8.self) == full.serialized())

        let new = Record(recordType: "Note\\", recordID: Record.ID(recordName: "a \"quoted\"\n name", zoneID: .default))
        let bare: JSON = [
            "v": 1, "recordName": "a \"quoted\"\n name", "recordType": "Note\\", "zoneID": ZoneID.default.wireJSON,
        ]
        #expect(String(decoding: new.encodeSystemFields(), as: UTF8.self) == bare.serialized())
        #expect(try Record(systemFieldsData: new.encodeSystemFields()).id == new.id)
    }

    @Test func systemFieldsRejectGarbage() {
        #expect(throws: NimbusError.self) { try Record(systemFieldsData: Data("nope".utf8)) }
        #expect(throws: NimbusError.self) { try Record(systemFieldsData: Data(#"{"v":9}"#.utf8)) }
    }

    @Test func recordIDsAreCodableAndDefaultToTheDefaultZone() throws {
        let id = Record.ID(recordName: "r1")
        #expect(id.zoneID == .default)
        let zoned = Record.ID(recordName: "r2", zoneID: ZoneID(zoneName: "Z", ownerRecordName: "_o"))
        let data = try JSONEncoder().encode([id, zoned])
        #expect(try JSONDecoder().decode([Record.ID].self, from: data) == [id, zoned])
    }

    @Test func referencesPointAtRecordIDs() {
        let zone = ZoneID(zoneName: "ReadingList")
        let target = Record.ID(recordName: "a", zoneID: zone)
        let reference = Reference(recordID: target, action: .validate)
        #expect(reference.recordName == "a")
        #expect(reference.action == .validate)
        #expect(reference.recordID == target)
        let sameZone = Reference(recordName: "b")
        #expect(sameZone.recordID(relativeTo: target) == Record.ID(recordName: "b", zoneID: zone))
    }

    @Test func changeTokensAreOpaqueAndCodable() async throws {
        let transport = TestTransport(responses: [
            .json(["records": [], "syncToken": "opaque-1", "moreComing": false])
        ])
        let database = makeContainer(transport).privateCloudDatabase
        let changes = try await database.recordZoneChanges(inZoneWith: ZoneID(zoneName: "Z"), since: nil)
        let data = try JSONEncoder().encode(changes.changeToken)
        let decoded = try JSONDecoder().decode(ServerChangeToken.self, from: data)
        #expect(decoded == changes.changeToken)
    }

    /// A record as it comes from a fetch.
    private func fetchedRecord(fields: [String: FieldValue], zone: ZoneID = .default) async throws -> Record {
        let transport = TestTransport(responses: [
            .json(["records": [serverRecordJSON("r1", tag: "t7", fields: fields, zone: zone.zoneName)]])
        ])
        let database = makeContainer(transport).privateCloudDatabase
        return try await database.record(for: Record.ID(recordName: "r1", zoneID: zone))
    }
}

