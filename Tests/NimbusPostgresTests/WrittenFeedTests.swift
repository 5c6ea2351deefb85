import NimbusProtocol
import NimbusStore
import PostgresNIO
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    /// The change feed joined by PostgreSQL from the records' stored wire parts (schema
    /// version 6) is the decoded feed written: the same records, tombstones, pages and
    /// tokens, byte for byte what the object form serializes to — also over rows written
    /// before version 6, which have no wire parts.
    @Suite("Written change feed")
    struct WrittenFeedTests {
        let alice = DatabaseKey.privateDatabase(of: "_alice")
        let caller = Caller(userRecordName: "_alice", deviceID: "phone")
        let closing = #","zoneID":{"ownerRecordName":"_alice","zoneName":"Z"}}"#

        /// Every page of zone Z's feed from `token`, read both ways; checks each pair.
        func readBothWays(_ store: PostgresStore, since token: String?, limit: Int) async throws -> [StoredRecord] {
            var records: [StoredRecord] = []
            var next = token
            while true {
                let page = try await store.recordChanges(zone: "Z", since: next, limit: limit, in: alice)
                let written = try await store.writtenRecordChanges(
                    zone: "Z", since: next, limit: limit, zoneClosing: closing, in: alice)
                let text = String(decoding: written.recordsJSON, as: UTF8.self)
                #expect(text == StoredRecord.writtenArray(page.records, closedBy: closing))
                #expect(written.syncToken == page.syncToken)
                #expect(written.moreComing == page.moreComing)
                // What the object form of each record serializes to.
                let zoneID = ZoneID(zoneName: "Z", ownerRecordName: "_alice")
                let objects = try page.records.map { record -> JSON in
                    record.deleted
                        ? .object(["recordName": .string(record.recordName), "deleted": .bool(true), "zoneID": zoneID.wireJSON])
                        : try record.record(zoneID: zoneID).wireJSON(numbersAsStrings: false, desiredKeys: nil)
                }
                #expect(text == JSON.array(objects).serialized())
                records += page.records
                next = page.syncToken
                if !page.moreComing { break }
            }
            return records
        }

        @Test func theJoinedFeedIsTheDecodedFeedWritten() async throws {
            try await TestPostgres.withNodes { stores in
                let store = stores[0]
                _ = try await store.modifyZones([.create(zoneName: "Z")], caller: caller, in: alice)
                let fields: [String: FieldValue] = [
                    "title": .string("Ünïcode \"quoted\" \\ and\nnewline\u{1}"), "n": .int64(42),
                    "when": .timestamp(1_700_000_000_000),
                ]
                let operations = (0..<25).map {
                    Requests.operation(.create, Requests.record("r\($0)", type: "Article", fields: fields))
                }
                _ = try await store.modifyRecords(
                    operations + [Requests.operation(.create, Requests.record("odd \"name\"\u{7}", fields: [:]))],
                    zone: "Z", atomic: false, policy: Requests.policy(), caller: caller, in: alice)
                let before = try await store.recordChanges(zone: "Z", since: nil, limit: 200, in: alice)
                _ = try await store.modifyRecords(
                    [
                        Requests.operation(.forceDelete, Requests.record("r3")),
                        Requests.operation(.forceDelete, Requests.record("odd \"name\"\u{7}")),
                        Requests.operation(.forceUpdate, Requests.record("r4", type: "Article", fields: ["n": .int64(1)])),
                    ],
                    zone: "Z", atomic: false, policy: Requests.policy(), caller: caller, in: alice)

                let fromStart = try await readBothWays(store, since: nil, limit: 7)
                #expect(fromStart.filter { !$0.deleted }.count == 24)
                let sinceToken = try await readBothWays(store, since: before.syncToken, limit: 2)
                #expect(Set(sinceToken.map(\.recordName)) == ["r3", "r4", "odd \"name\"\u{7}"])
                #expect(sinceToken.filter(\.deleted).count == 2)
                // An empty page, the default zone of the database, a zone that does not exist.
                _ = try await readBothWays(store, since: sinceToken.isEmpty ? nil : before.syncToken, limit: 200)
                let empty = try await store.writtenRecordChanges(
                    zone: "_defaultZone", since: nil, limit: 10, zoneClosing: closing, in: alice)
                #expect(empty.recordsJSON == Array("[]".utf8))
                await #expect(throws: CloudKitError.self) {
                    try await store.writtenRecordChanges(zone: "Nope", since: nil, limit: 10, zoneClosing: closing, in: alice)
                }
            }
        }

        @Test func rowsWrittenBeforeTheWireColumnsAreDecoded() async throws {
            try await TestPostgres.withNodes { stores in
                let store = stores[0]
                _ = try await store.modifyZones([.create(zoneName: "Z")], caller: caller, in: alice)
                let operations = (0..<12).map {
                    Requests.operation(.create, Requests.record("r\($0)", fields: ["n": .int64(Int64($0))]))
                }
                _ = try await store.modifyRecords(
                    operations, zone: "Z", atomic: false, policy: Requests.policy(), caller: caller, in: alice)
                // As rows written before schema version 6 look: no wire parts.
                try await store.rows(
                    "UPDATE records SET wire_head = NULL, wire_tail = NULL, wire_version = NULL WHERE name IN ('r2', 'r9')")
                // As a row rewritten by a node of an older release looks: new fields and version,
                // the wire parts of the version before.
                try await store.rows(
                    """
                    UPDATE records SET fields = '{"n":{"type":"INT64","value":99}}', version = version + 100,
                        modified_at = modified_at + 1
                    WHERE name = 'r5'
                    """)
                try await store.rows("UPDATE databases SET version = version + 100")

                let records = try await readBothWays(store, since: nil, limit: 5)
                #expect(records.count == 12)
                #expect(records.last?.recordName == "r5")
                #expect(records.last?.fieldsJSON.contains("99") == true)
            }
        }
    }
}
