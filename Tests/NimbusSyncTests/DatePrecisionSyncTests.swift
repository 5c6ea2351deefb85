import Foundation
import Nimbus
import NimbusProtocol
import NimbusSync
import NimbusTestSupport
import Testing

/// Dates through the sync engine: the local store keeps them exactly, and another device
/// fetches them with the same bits, on both engines.
@Suite("Dates through the sync engine")
struct DatePrecisionSyncTests {
    static let configuration = SyncConfiguration(zones: ["Events"], subscriptionID: nil)

    @Test(arguments: Engine.available) func datesReachTheOtherDeviceWithTheSameBits(engine: Engine) async throws {
        try await SyncHarness.with(engine: engine) { harness in
            let (a, _) = try harness.engine("A", configuration: Self.configuration)
            let (b, _) = try harness.engine("B", configuration: Self.configuration)
            try await a.start()
            try await b.start()
            var random = SplitMix64(seed: 38)
            let now = Date().timeIntervalSinceReferenceDate
            var dates: [String: [Date]] = [:]
            for index in 0..<150 {
                dates["e\(index)"] = (0..<3).map { _ in
                    Date(timeIntervalSinceReferenceDate: now + Double.random(in: -1e5...1e5, using: &random))
                }
            }
            func fields(_ list: [Date]) -> [String: FieldValue] {
                ["at": FieldValue(date: list[0]), "all": .list(elementType: .timestamp, list[1...].map(FieldValue.init(date:)))]
            }
            func check(_ record: LocalRecord?, _ name: String, _ what: String) {
                let expected = dates[name] ?? []
                let stored = [record?["at"]?.dateValue] + (record?["all"]?.listValue ?? []).map(\.dateValue)
                #expect(
                    stored.map { $0?.timeIntervalSinceReferenceDate.bitPattern }
                        == expected.map { Optional($0.timeIntervalSinceReferenceDate.bitPattern) },
                    "\(what) \(name)")
            }
            try a.store.write { _, outbox in
                for (name, list) in dates {
                    try outbox.save(LocalRecord(zoneName: "Events", recordName: name, recordType: "Event", fields: fields(list)))
                }
            }
            // The local store, before and after the send.
            for name in dates.keys { check(try a.store.record(zone: "Events", name: name), name, "A's store") }
            try await a.sendChanges()
            #expect(try a.store.pendingCount() == 0)
            for name in dates.keys { check(try a.store.record(zone: "Events", name: name), name, "A's store after the send") }

            try await b.fetchChanges()
            #expect(try b.store.records(inZone: "Events").count == dates.count)
            for name in dates.keys { check(try b.store.record(zone: "Events", name: name), name, "B's store") }
        }
    }
}
