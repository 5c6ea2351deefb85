import Foundation
import Nimbus
import struct NimbusProtocol.SplitMix64
import NimbusTestSupport
import Testing

/// A `Date` saved in a record comes back with the same bits (`timeIntervalSinceReferenceDate`)
/// from a save, a fetch, a query and the change feed, on both engines; and a query compares
/// dates exactly.
@Suite("Dates keep their precision")
struct DatePrecisionTests {
    /// Seeded dates as `Date()` gives them: near now, with every bit of their fraction used.
    static func dates(_ count: Int, seed: UInt64) -> [Date] {
        var random = SplitMix64(seed: seed)
        let now = Date().timeIntervalSinceReferenceDate
        return (0..<count).map { _ in Date(timeIntervalSinceReferenceDate: now + Double.random(in: -1e5...1e5, using: &random)) }
    }

    static func same(_ a: Date?, _ b: Date?) -> Bool {
        a?.timeIntervalSinceReferenceDate.bitPattern == b?.timeIntervalSinceReferenceDate.bitPattern
    }

    @Test(arguments: Engine.available)
    func datesComeBackExactlyFromSavesFetchesQueriesAndTheChangeFeed(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let zone = ZoneID(zoneName: "Events")
            _ = try await database.save(RecordZone(zoneID: zone))
            let dates = Self.dates(300, seed: 37)
            var expected: [Record.ID: (Date, [Date])] = [:]
            var records: [Record] = []
            for index in 0..<100 {
                var record = Record(recordType: "Event", recordID: Record.ID(recordName: "e\(index)", zoneID: zone))
                let at = dates[index], list = [dates[100 + index], dates[200 + index]]
                record["at"] = at
                record["all"] = list
                expected[record.id] = (at, list)
                records.append(record)
            }
            // Two records a fraction of a millisecond apart.
            var twin = Record(recordType: "Event", recordID: Record.ID(recordName: "twin", zoneID: zone))
            let twinDate = Date(timeIntervalSinceReferenceDate: dates[0].timeIntervalSinceReferenceDate + 0.000_1)
            twin["at"] = twinDate
            twin["all"] = [twinDate]
            expected[twin.id] = (twinDate, [twinDate])
            records.append(twin)

            func check(_ record: Record, _ what: String) {
                guard let (at, list) = expected[record.id] else {
                    Issue.record("unexpected \(record.id.recordName) from \(what)")
                    return
                }
                #expect(Self.same(record["at"], at), "\(what) \(record.id.recordName)")
                let all: [Date]? = record["all"]
                #expect(all?.count == 2 || all?.count == 1, "\(what)")
                #expect(zip(all ?? [], list).allSatisfy { Self.same($0, $1) }, "\(what) \(record.id.recordName)")
            }
            let saved = try await database.modifyRecords(saving: records)
            for result in saved.saveResults.values { check(try result.get(), "save") }

            let fetched = try await database.records(for: Array(expected.keys))
            #expect(fetched.count == expected.count)
            for result in fetched.values { check(try result.get(), "fetch") }

            let changes = try await database.recordZoneChanges(inZoneWith: zone, since: nil, resultsLimit: 400)
            #expect(changes.modifications.count == expected.count)
            for record in changes.modifications { check(record, "changes") }

            // A query for a date finds the record with exactly that date, not its twin in the
            // same millisecond; an order comparison splits the millisecond too.
            for index in [0, 1, 50, 99] {
                let found = try await database.records(
                    matching: Query(recordType: "Event", filters: [.equals("at", dates[index])]), inZoneWith: zone)
                #expect(found.matchResults.map(\.0.recordName) == ["e\(index)"])
                for (_, result) in found.matchResults { check(try result.get(), "query") }
            }
            let later = try await database.records(
                matching: Query(recordType: "Event", filters: [.greaterThan("at", dates[0]), .lessThan("at", twinDate.addingTimeInterval(1e-5))]),
                inZoneWith: zone)
            #expect(later.matchResults.map(\.0.recordName) == ["twin"])
        }
    }
}
