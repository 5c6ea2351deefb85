import Foundation
import NimbusCloudKit
import NimbusProtocol
import NimbusTestSupport
import Testing

/// A `Date` in a `CKRecord` comes back as it was (the same `timeIntervalSinceReferenceDate`
/// bits), as Apple's sync-engine sample expects when it compares `Date()` values: from a save,
/// a fetch, a query, the change feed and a `CKSyncEngine` on another device; both engines.
@Suite("CloudKit dates keep their precision")
struct DatePrecisionCloudKitTests {
    static func dates(_ count: Int, seed: UInt64) -> [Date] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in Date().addingTimeInterval(Double.random(in: -1e5...1e5, using: &random)) }
    }

    static func bits(_ date: Date?) -> UInt64? { date?.timeIntervalSinceReferenceDate.bitPattern }

    @Test(arguments: Engine.available)
    func aRecordsDatesComeBackExactlyFromEveryRead(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let zone = CKRecordZone(zoneName: "Events")
            _ = try await database.save(zone)
            let dates = Self.dates(60, seed: 39)
            var records: [CKRecord] = []
            for index in 0..<30 {
                let record = CKRecord(recordType: "Event", recordID: CKRecord.ID(recordName: "e\(index)", zoneID: zone.zoneID))
                record["at"] = dates[index]
                record["all"] = [dates[30 + index], Date()]
                records.append(record)
            }
            let expected = Dictionary(uniqueKeysWithValues: records.map { ($0.recordID.recordName, $0) })
            func check(_ record: CKRecord, _ what: String) {
                let name = record.recordID.recordName
                #expect(Self.bits(record["at"] as? Date) == Self.bits(expected[name]?["at"] as? Date), "\(what) \(name)")
                let all = (record["all"] as? [Date])?.map { Self.bits($0) }
                #expect(all == (expected[name]?["all"] as? [Date])?.map { Self.bits($0) }, "\(what) \(name)")
            }
            let (saved, _) = try await database.modifyRecords(saving: records, deleting: [])
            for result in saved.values { check(try result.get(), "save") }
            for record in records { check(try await database.record(for: record.recordID), "fetch") }
            let changes = try await database.recordZoneChanges(inZoneWith: zone.zoneID, since: nil)
            #expect(changes.modificationResultsByID.count == records.count)
            for result in changes.modificationResultsByID.values { check(try result.get().record, "changes") }

            // A query for a date matches that exact date.
            for index in [0, 7, 29] {
                let query = CKQuery(recordType: "Event", predicate: NSPredicate(format: "at == %@", dates[index] as NSDate))
                let found = try await database.records(matching: query, inZoneWith: zone.zoneID)
                #expect(found.matchResults.map(\.0.recordName) == ["e\(index)"])
                for (_, result) in found.matchResults { check(try result.get(), "query") }
            }
        }
    }

    @Test(arguments: Engine.available)
    func theSyncEngineHandsTheOtherDeviceTheSameDates(engine: Engine) async throws {
        try await CloudKitServer.with(engine: engine) { server in
            // Two devices of one user.
            let signedIn = try await server.connection(user: "ada")
            let devices = ["device-a", "device-b"].map { id -> (ContactsDevice, CKDatabase) in
                var connection = signedIn
                connection.deviceID = id
                return (ContactsDevice(), CKContainer(identifier: CloudKitServer.containerID, connection: connection).privateCloudDatabase)
            }
            for (device, database) in devices { await device.start(database: database) }
            let a = devices[0].0, b = devices[1].0
            await a.createZone()
            let dates = Self.dates(40, seed: 40)
            for (index, date) in dates.enumerated() { await a.edit("c\(index)", name: "Contact \(index)", at: date) }
            try await a.syncEngine.sendChanges()
            try await b.syncEngine.fetchChanges()
            let contacts = await b.contacts
            #expect(contacts.count == dates.count)
            for (index, date) in dates.enumerated() {
                #expect(Self.bits(contacts["c\(index)"]?.modified) == Self.bits(date), "c\(index)")
            }
            // A conflict between edits a fraction of a millisecond apart goes to the later one.
            let now = Date()
            await b.edit("c0", name: "B's", at: now)
            await a.edit("c0", name: "A's", at: now.addingTimeInterval(0.000_1))
            try await b.syncEngine.sendChanges()
            // The conflict: A's edit is the newer, so A re-queues it (the send reports the failure).
            await #expect(throws: (any Error).self) { try await a.syncEngine.sendChanges() }
            try await a.syncEngine.sendChanges()
            try await b.syncEngine.fetchChanges()
            #expect(await b.contacts["c0"]?.name == "A's")
            #expect(Self.bits(await b.contacts["c0"]?.modified) == Self.bits(now.addingTimeInterval(0.000_1)))
        }
    }
}
