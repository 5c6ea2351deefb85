import Foundation
import Nimbus
import NimbusProtocol
import Testing

@testable import NimbusSync

/// A fetched page's local states, read with one query: what a read per record would see.
@Suite("Page states")
struct PageStatesTests {
    static let zone = "ReadingList"

    func serverRecord(_ name: String, tag: String, title: String) throws -> Nimbus.Record {
        let system = JSON.object([
            "v": 1, "recordName": .string(name), "recordType": "Bookmark", "recordChangeTag": .string(tag),
            "zoneID": ["zoneName": .string(Self.zone)],
        ]).serialized()
        var record = try Nimbus.Record(systemFieldsData: Data(system.utf8))
        record.setFieldValue(.string(title), forKey: "title")
        return record
    }

    @Test func aPageReadsTheCopiesItNamesAndAgainWhenANameRepeats() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("page-states-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try LocalStore(path: directory.appendingPathComponent("local.sqlite").path)
        let odd = #"a "quoted" \ name"#
        let stored = try serverRecord(odd, tag: "t1", title: "A")
        let other = try serverRecord("other", tag: "t9", title: "not named")
        let newer = try serverRecord(odd, tag: "t2", title: "A again")
        let zone = Self.zone
        try await store.transaction { transaction in
            _ = try transaction.apply([.putCopy(stored, confirmed: true)], zone: zone, name: odd)
            _ = try transaction.apply([.putCopy(other, confirmed: true)], zone: zone, name: "other")
        }
        let (first, absent, again) = try await store.transaction { transaction in
            var states = try PageStates(transaction, zone: zone, names: [odd, "new", odd], noPending: false)
            let first = try states.state(of: odd)
            let absent = try states.state(of: "new")
            // The page's first occurrence of the name is applied before the second is read.
            _ = try transaction.apply([.putCopy(newer, confirmed: true)], zone: zone, name: odd)
            return (first, absent, try states.state(of: odd))
        }
        #expect(first.copy?.tag == "t1")
        #expect(first.copy?.fields == ["title": .string("A")])
        #expect(first.copy?.system == stored.encodeSystemFields())
        #expect(first.pending == nil)
        #expect(absent == LocalState())
        #expect(again.copy?.tag == "t2")
        #expect(again.copy?.fields == ["title": .string("A again")])
    }
}
