import Foundation
import NimbusProtocol
import NimbusTestSupport
import Testing

/// TIMESTAMPs with fractions of a millisecond over the HTTP API: `value` stays whole
/// milliseconds (what CloudKit Web Services clients read), `millisecondFraction` beside it is
/// stored and returned, and filters compare to the fraction.
@Suite("TIMESTAMP fractions over the API")
struct TimestampFractionServerTests {
    /// A field dictionary with a fraction, as Nimbus's SDK sends it.
    static func precise(_ milliseconds: Int64, _ fraction: Double) -> JSON {
        ["value": .int(milliseconds), "type": "TIMESTAMP", "millisecondFraction": .double(fraction)]
    }

    static func save(_ client: TestClient, _ name: String, _ fields: [String: JSON]) async throws -> TestClient.Reply {
        try await client.modify(
            "_defaultZone",
            [["operationType": "create", "record": ["recordName": .string(name), "recordType": "Event", "fields": .object(fields)]]])
    }

    @Test(arguments: Engine.available) func fractionsAreStoredAndReturnedBesideWholeMilliseconds(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let ada = try await server.user("ada")
            let list: JSON = [
                "value": [1_700_000_000_000, 1_700_000_000_001], "type": "TIMESTAMP_LIST",
                "millisecondFraction": [.double(0.25), 0],
            ]
            let saved = try await Self.save(ada, "precise", ["at": Self.precise(1_700_000_000_123, -0.375), "all": list])
            #expect(saved.status == 200, "\(saved.text)")
            let lookup = try await ada.lookup("precise")
            let changes = try await ada.changes("_defaultZone")
            for (what, record) in [("save", saved.records.first), ("lookup", lookup.records.first), ("changes", changes.records.first)] {
                #expect(record?["fields"]?["at"] == Self.precise(1_700_000_000_123, -0.375), "\(what)")
                #expect(record?["fields"]?["all"] == list, "\(what)")
            }

            // A client that knows nothing of the fraction: its request works, and the answer's
            // `value` is an integer of milliseconds.
            let plain = try await ada.postRaw(
                "records/modify",
                #"{"zoneID":{"zoneName":"_defaultZone"},"operations":[{"operationType":"create","record":{"recordName":"plain","recordType":"Event","fields":{"at":{"value":1700000000999,"type":"TIMESTAMP"},"all":{"value":[5]}}}}]}"#)
            #expect(plain.status == 200, "\(plain.text)")
            let read = try await ada.postRaw(
                "records/lookup", #"{"zoneID":{"zoneName":"_defaultZone"},"records":[{"recordName":"plain"},{"recordName":"precise"}]}"#)
            #expect(read.text.contains(#""at":{"type":"TIMESTAMP","value":1700000000999}"#), "\(read.text)")
            #expect(read.records.last?["fields"]?["at"]?["value"]?.int64 == 1_700_000_000_123, "\(read.text)")
            #expect(read.text.contains(#""value":1700000000123}"#), "an integer, never a fraction, in value: \(read.text)")

            // A fraction where it does not belong is refused with its reason.
            let refused = try await Self.save(
                ada, "bad", ["count": ["value": 3, "type": "INT64", "millisecondFraction": .double(0.5)]])
            #expect(refused.records.first?["serverErrorCode"] == "BAD_REQUEST" || refused.serverErrorCode == "BAD_REQUEST", "\(refused.text)")
            #expect(refused.text.contains("millisecondFraction"), "\(refused.text)")
        }
    }

    @Test(arguments: Engine.available) func filtersCompareToTheFractionOfAMillisecond(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let ada = try await server.user("ada")
            // Eight records within one millisecond, and two either side of it.
            let fractions: [Double] = [-0.5, -0.375, -0.25, -0.125, 0, 0.125, 0.25, 0.375]
            var times: [String: (Int64, Double)] = ["before": (999, 0.25), "after": (1_001, -0.5)]
            for (index, fraction) in fractions.enumerated() { times["r\(index)"] = (1_000, fraction) }
            for (name, time) in times {
                let saved = try await Self.save(ada, name, ["at": Self.precise(time.0, time.1)])
                #expect(saved.records.first?["serverErrorCode"] == nil, "\(saved.text)")
            }
            func expected(_ keep: ((Int64, Double)) -> Bool) -> Set<String> { Set(times.filter { keep($0.value) }.keys) }
            func exact(_ time: (Int64, Double)) -> Double { Double(time.0) + time.1 }
            let probes: [(Int64, Double)] = [(1_000, -0.125), (1_000, 0), (1_000, 0.3), (999, 0.25), (1_001, -0.5), (1_000, -0.5)]
            for probe in probes {
                let value = Self.precise(probe.0, probe.1)
                let cases: [(String, (Double, Double) -> Bool)] = [
                    ("EQUALS", { $0 == $1 }), ("NOT_EQUALS", { $0 != $1 }), ("LESS_THAN", { $0 < $1 }),
                    ("LESS_THAN_OR_EQUALS", { $0 <= $1 }), ("GREATER_THAN", { $0 > $1 }),
                    ("GREATER_THAN_OR_EQUALS", { $0 >= $1 }),
                ]
                for (comparator, holds) in cases {
                    let filterJSON: JSON = ["comparator": .string(comparator), "fieldName": "at", "fieldValue": value]
                    let sortings: [[JSON]] = [[], [sort("at")], [sort("at", ascending: false)]]
                    for sorts in sortings {
                        let names = try await ada.queryAll("Event", filters: [filterJSON], sorts: sorts, limit: 3)
                        #expect(
                            Set(names) == expected { holds(exact($0), exact(probe)) } && names.count == Set(names).count,
                            "\(comparator) \(probe) sorted \(sorts): \(names.sorted())")
                    }
                }
            }
            // Sorted by the field, results are in order of whole milliseconds (ties by name).
            let sorted = try await ada.queryAll("Event", sorts: [sort("at")], limit: 4)
            #expect(sorted.first == "before" && sorted.last == "after", "\(sorted)")
            // A filter without fraction (a third-party client's) is the whole millisecond.
            let whole = try await ada.queryAll("Event", filters: [filter("at", "EQUALS", 1_000, type: "TIMESTAMP")], limit: 10)
            #expect(whole == ["r4"])
        }
    }
}
