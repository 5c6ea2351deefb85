import Foundation
import NIOHTTP1
import NimbusProtocol
import NimbusTestSupport
import Testing

/// Issue 14 §3: names are compared byte for byte, so a name that a database or Swift would
/// see differently (NUL, other control characters, invalid UTF-8, a non-NFC spelling) is
/// refused at the door, and every accepted name is one record everywhere.
@Suite("Names are refused at the door unless they identify one thing everywhere")
struct NameRulesTests {
    func expectRefused(
        _ reply: TestClient.Reply, mentioning words: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(reply.status == 400, "\(reply.text)", sourceLocation: sourceLocation)
        #expect(reply.serverErrorCode == "BAD_REQUEST", sourceLocation: sourceLocation)
        let reason = reply["reason"]?.string ?? ""
        for word in words {
            #expect(reason.contains(word), "reason '\(reason)' should mention \(word)", sourceLocation: sourceLocation)
        }
    }

    static let nfc = "caf\u{E9}"
    static let nfd = "cafe\u{301}"

    @Test(arguments: Engine.available)
    func controlCharactersInNamesAreRefusedNotTruncated(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            expectRefused(
                try await alice.modify("Z", [op("create", "col\u{0}x")]),
                mentioning: ["operations[0].record.recordName", "U+0000", "control character"])
            expectRefused(
                try await alice.modify("Z", [op("create", "col\u{1F}y")]), mentioning: ["U+001F"])
            expectRefused(try await alice.modify("Z", [op("create", "col\u{85}y")]), mentioning: ["U+0085"])
            expectRefused(
                try await alice.post("records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "col\u{0}x"]]]),
                mentioning: ["records[0].recordName", "U+0000"])
            expectRefused(try await alice.createZone("Z\u{0}x"), mentioning: ["zoneName", "U+0000"])
            expectRefused(
                try await alice.post("records/changes", ["zoneID": ["zoneName": "Z\u{0}x"]]), mentioning: ["zoneID.zoneName"])
            expectRefused(
                try await alice.modify("Z", [op("create", "r", fields: ["link": ["recordName": "t\u{0}"]])]),
                mentioning: ["operations[0].record.fields.link.value.recordName"])
            expectRefused(
                try await alice.post(
                    "subscriptions/modify",
                    [
                        "operations": [
                            [
                                "operationType": "create",
                                "subscription": [
                                    "subscriptionID": "s\u{0}1", "subscriptionType": "zone", "zoneID": ["zoneName": "Z"],
                                ],
                            ]
                        ]
                    ]),
                mentioning: ["subscriptionID", "U+0000"])
            expectRefused(
                try await alice.post("subscriptions/lookup", ["subscriptions": [["subscriptionID": "s\u{0}1"]]]),
                mentioning: ["subscriptions[0].subscriptionID"])
            expectRefused(
                try await alice.post("users/lookup/email", ["users": [["emailAddress": "alice\u{0}@example.com"]]]),
                mentioning: ["users[0].emailAddress"])
            // Nothing was written: `col` does not exist and the zone list is unchanged.
            let lookup = try await alice.post("records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "col"]]])
            #expect(lookup.records.first?["serverErrorCode"] == "NOT_FOUND")
            let zones = try await alice.get("zones/list")
            #expect(zones.zones.compactMap { $0["zoneID"]?["zoneName"]?.string }.sorted() == ["Z", "_defaultZone"])
        }
    }

    @Test(arguments: Engine.available)
    func invalidUTF8IsRefusedNotRepaired(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let prefix = Array(#"{"zoneID":{"zoneName":"Z"},"operations":[{"operationType":"create","record":{"recordName":"a"#.utf8)
            let suffix = Array(#"","recordType":"Item"}}]}"#.utf8)
            for bad: [UInt8] in [[0xFF], [0xC3], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]] {
                let reply = try await alice.send(
                    alice.url("private", "records/modify"), method: .POST, body: prefix + bad + suffix, headers: [])
                expectRefused(reply, mentioning: ["malformed JSON at byte \(prefix.count)", "invalid UTF-8"])
            }
            let feed = try await alice.changes("Z")
            #expect(feed.records.isEmpty)
        }
    }

    @Test(arguments: Engine.available)
    func namesMustBeNFCAndIdentifiersMustBeIdentifiers(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            expectRefused(
                try await alice.modify("Z", [op("create", Self.nfd)]),
                mentioning: ["operations[0].record.recordName", "Normalization Form C"])
            expectRefused(try await alice.createZone(Self.nfd), mentioning: ["Normalization Form C"])
            expectRefused(
                try await alice.post("records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": .string(Self.nfd)]]]),
                mentioning: ["Normalization Form C"])
            expectRefused(
                try await alice.modify("Z", [op("create", "r", "Bad Type")]),
                mentioning: ["operations[0].record.recordType", "ASCII letter"])
            expectRefused(
                try await alice.modify("Z", [op("create", "r", fields: ["bad-name": 1])]),
                mentioning: ["operations[0].record.fields", "bad-name"])
            expectRefused(
                try await alice.modify("Z", [op("create", "r", fields: ["1st": 1])]), mentioning: ["field name"])
            expectRefused(
                try await alice.query("Item", filters: [["comparator": "EQUALS", "fieldName": "a\u{0}", "fieldValue": ["value": 1]]]),
                mentioning: ["query.filterBy[0].fieldName"])
            expectRefused(
                try await alice.query("Item", sorts: [["fieldName": "n o"]]), mentioning: ["query.sortBy[0].fieldName"])
            expectRefused(try await alice.query("It\u{0}em"), mentioning: ["query.recordType"])
            expectRefused(try await alice.query("Item", desiredKeys: ["a\u{0}"]), mentioning: ["desiredKeys[0]"])
            expectRefused(
                try await alice.modify("Z", [op("create", String(repeating: "n", count: 256))]),
                mentioning: ["256 bytes", "at most 255"])
        }
    }

    /// Names that differ only in ways a careless comparison would merge each stay one record
    /// through create, lookup (in one batch), query, changes and delete.
    @Test(arguments: Engine.available)
    func distinctNamesStayDistinctRecords(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            let zone = "Z\u{E9}\u{1F600} \"q\""
            #expect(try await alice.createZone(zone).status == 200)
            let names = ["cafe", Self.nfc, "CAFE", "caf\u{E9} ", "\u{1F600}\u{2028}x", "_under", "a/b?c&d"]
            let created = try await alice.modify(
                zone, names.enumerated().map { index, name in op("create", name, fields: ["n": .int(index)]) })
            #expect(created.status == 200)
            #expect(created.records.compactMap { $0["recordName"]?.string } == names)

            let lookup = try await alice.post(
                "records/lookup",
                ["zoneID": ["zoneName": .string(zone)], "records": .array(names.reversed().map { ["recordName": .string($0)] })])
            #expect(lookup.records.compactMap { $0["recordName"]?.string } == names.reversed())
            #expect(
                lookup.records.compactMap { $0["fields"]?["n"]?["value"] }
                    == names.indices.reversed().map { JSON.int($0) })

            let query = try await alice.query("Item", zone: zone)
            #expect(Set(query.recordNames) == Set(names))
            let feed = try await alice.changes(zone)
            #expect(Set(feed.records.compactMap { $0["recordName"]?.string }) == Set(names))
            #expect(feed.records.allSatisfy { $0["zoneID"]?["zoneName"]?.string == zone })

            let deleted = try await alice.modify(zone, [op("forceDelete", Self.nfc)])
            #expect(deleted.records.first?["deleted"] == .bool(true))
            let after = try await alice.post(
                "records/lookup",
                ["zoneID": ["zoneName": .string(zone)], "records": [["recordName": "cafe"], ["recordName": .string(Self.nfc)]]])
            #expect(after.records.first?["fields"]?["n"]?["value"] == .int(0))
            #expect(after.records.last?["serverErrorCode"] == "NOT_FOUND")
            let token = try #require(feed["syncToken"]?.string)
            let delta = try await alice.changes(zone, since: token)
            #expect(delta.records.compactMap { $0["recordName"]?.string } == [Self.nfc])
        }
    }
}
