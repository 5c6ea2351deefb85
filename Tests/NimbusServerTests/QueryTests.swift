import Foundation
import NimbusProtocol
import NimbusServer
import NimbusStore
import NimbusTestSupport
import Testing

/// `records/query` through HTTP against a real server: comparators, system fields, sorts,
/// paging, desired keys, zones and errors.
@Suite("records/query")
struct QueryTests {
    /// Four places in zone "Z" covering every field type the comparators look at.
    static func seedPlaces(_ client: TestClient) async throws {
        _ = try await client.createZone("Z")
        let reply = try await client.modify(
            "Z",
            [
                typedOp(
                    "create", "p1", "Place",
                    [
                        "name": ("Café Alpha", "STRING"), "rank": (1, "INT64"), "score": (.double(1.5), "DOUBLE"),
                        "when": (1000, "TIMESTAMP"), "tags": (["red", "blue"], "STRING_LIST"),
                        "spot": (location(37.0, -122.0), "LOCATION"), "bio": ("the quick brown fox", "STRING"),
                        "owner": (["recordName": "u1"], "REFERENCE"),
                    ]),
                typedOp(
                    "create", "p2", "Place",
                    [
                        "name": ("Beta Bar", "STRING"), "rank": (2, "INT64"), "score": (.double(2.5), "DOUBLE"),
                        "when": (2000, "TIMESTAMP"), "tags": (["blue"], "STRING_LIST"),
                        "spot": (location(37.01, -122.0), "LOCATION"), "bio": ("a lazy dog sleeps", "STRING"),
                        "owner": (["recordName": "u2"], "REFERENCE"),
                    ]),
                typedOp(
                    "create", "p3", "Place",
                    [
                        "name": ("Alpine Lodge", "STRING"), "rank": (3, "INT64"), "score": (.double(3.5), "DOUBLE"),
                        "when": (3000, "TIMESTAMP"), "tags": (["green", "gold"], "STRING_LIST"),
                        "spot": (location(38.0, -122.0), "LOCATION"), "bio": ("Quick, lazy FOX!", "STRING"),
                    ]),
                typedOp(
                    "create", "p4", "Place",
                    ["name": ("delta", "STRING"), "rank": (4, "INT64"), "when": (4000, "TIMESTAMP"), "tags": ([], "STRING_LIST")]),
            ])
        #expect(reply.status == 200)
        #expect(reply.records.allSatisfy { $0["serverErrorCode"] == nil }, "\(reply.text)")
    }

    static let comparatorCases: [(filter: JSON, expected: [String])] = [
        (filter("rank", "EQUALS", 2), ["p2"]),
        (filter("rank", "NOT_EQUALS", 2), ["p1", "p3", "p4"]),
        (filter("rank", "LESS_THAN", 3), ["p1", "p2"]),
        (filter("rank", "LESS_THAN_OR_EQUALS", 3), ["p1", "p2", "p3"]),
        (filter("score", "GREATER_THAN", .double(2.0)), ["p2", "p3"]),
        (filter("when", "GREATER_THAN_OR_EQUALS", 3000, type: "TIMESTAMP"), ["p3", "p4"]),
        (filter("spot", "NEAR", location(37.0, -122.0), type: "LOCATION", distance: 2_000), ["p1", "p2"]),
        (filter("bio", "CONTAINS_ALL_TOKENS", "fox quick"), ["p1", "p3"]),
        (filter("bio", "CONTAINS_ANY_TOKENS", "dog brown"), ["p1", "p2"]),
        (filter("___all", "CONTAINS_ALL_TOKENS", "lodge lazy"), ["p3"]),
        (["comparator": "CONTAINS_ANY_TOKENS", "fieldValue": ["value": "bar lodge"]], ["p2", "p3"]),
        (filter("rank", "IN", [1, 3, 9]), ["p1", "p3"]),
        (filter("rank", "NOT_IN", [1, 3]), ["p2", "p4"]),
        (filter("tags", "IN", ["gold", "red"], type: "STRING_LIST"), ["p1", "p3"]),
        (filter("tags", "NOT_IN", ["gold", "red"], type: "STRING_LIST"), ["p2", "p4"]),
        (filter("tags", "LIST_CONTAINS", "blue"), ["p1", "p2"]),
        (filter("tags", "NOT_LIST_CONTAINS", "blue"), ["p3", "p4"]),
        (filter("tags", "NOT_LIST_CONTAINS_ANY", ["red", "gold"], type: "STRING_LIST"), ["p2", "p4"]),
        (filter("tags", "LIST_CONTAINS_ALL", ["red", "blue"], type: "STRING_LIST"), ["p1"]),
        (filter("tags", "NOT_LIST_CONTAINS_ALL", ["red", "blue"], type: "STRING_LIST"), ["p2", "p3", "p4"]),
        (filter("name", "BEGINS_WITH", "Al"), ["p3"]),
        (filter("name", "NOT_BEGINS_WITH", "Al"), ["p1", "p2", "p4"]),
        (filter("tags", "LIST_MEMBER_BEGINS_WITH", "gr"), ["p3"]),
        (filter("tags", "NOT_LIST_MEMBER_BEGINS_WITH", "b"), ["p3", "p4"]),
        (filter("owner", "EQUALS", ["recordName": "u2"], type: "REFERENCE"), ["p2"]),
        (filter("owner", "EQUALS", "u1"), ["p1"]),
    ]

    @Test(arguments: Engine.available) func everyComparatorReturnsExactlyTheMatchingRecords(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await Self.seedPlaces(alice)
            for (index, testCase) in Self.comparatorCases.enumerated() {
                let reply = try await alice.query("Place", filters: [testCase.filter], zone: "Z")
                #expect(reply.status == 200, "case \(index): \(reply.text)")
                #expect(reply.recordNames == testCase.expected, "case \(index) \(testCase.filter.serialized())")
            }
            // Every comparator of the protocol is covered.
            let covered = Set(Self.comparatorCases.compactMap { $0.filter["comparator"]?.string })
            #expect(covered == Set(QueryFilter.Comparator.allCases.map(\.rawValue)))
        }
    }

    @Test(arguments: Engine.available) func filtersCombineWithAndAndRecordsComeBackWithSystemFields(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice", device: "phone")
            try await Self.seedPlaces(alice)
            let reply = try await alice.query(
                "Place", filters: [filter("tags", "LIST_CONTAINS", "blue"), filter("rank", "GREATER_THAN", 1)], zone: "Z")
            #expect(reply.recordNames == ["p2"])
            let record = try #require(reply.records.first)
            #expect(record["recordType"] == "Place")
            #expect(record["recordChangeTag"]?.string?.isEmpty == false)
            #expect(record["fields"]?["name"] == ["value": "Beta Bar", "type": "STRING"])
            #expect(record["created"]?["userRecordName"]?.string == alice.userRecordName)
            #expect(record["zoneID"]?["zoneName"] == "Z")
            #expect(reply["continuationMarker"] == nil)
        }
    }

    @Test(arguments: Engine.available) func systemFieldsFilterAndSort(engine: Engine) async throws {
        // The server's clock stands still until the test moves it: p2's save comes later by
        // exactly 5 ms, whatever the machine's load.
        let clock = ManualWallClock(millis: 1_795_240_000_000)
        try await TestServer.with(engine, configure: { $0.clock = clock.wallClock }) { server in
            let alice = try await server.user("alice")
            let bob = try await server.user("bob")
            try await Self.seedPlaces(alice)
            // p2 is modified last.
            let lookup = try await alice.post("records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "p2"]]])
            let tag = try #require(lookup.records.first?["recordChangeTag"])
            clock.advance(by: .milliseconds(5))
            _ = try await alice.modify(
                "Z", [["operationType": "update", "record": ["recordName": "p2", "recordType": "Place", "recordChangeTag": tag, "fields": ["rank": ["value": 20]]]]])

            let byName = try await alice.query(
                "Place", filters: [systemFilter("recordName", "EQUALS", ["recordName": "p3"], type: "REFERENCE")], zone: "Z")
            #expect(byName.recordNames == ["p3"])
            let byNameString = try await alice.query("Place", filters: [systemFilter("recordName", "IN", ["p1", "p4"])], zone: "Z")
            #expect(byNameString.recordNames == ["p1", "p4"])
            let mine = try await alice.query(
                "Place", filters: [systemFilter("createdUserRecordName", "EQUALS", .string(alice.userRecordName!))], zone: "Z")
            #expect(mine.recordNames == ["p1", "p2", "p3", "p4"])
            let bobs = try await alice.query(
                "Place", filters: [systemFilter("modifiedUserRecordName", "EQUALS", .string(bob.userRecordName!))], zone: "Z")
            #expect(bobs.recordNames.isEmpty)
            let latest = try await alice.query(
                "Place", sorts: [sort("modifiedTimestamp", ascending: false, system: true)], zone: "Z", limit: 1)
            #expect(latest.recordNames == ["p2"])
            let created = try #require(latest.records.first?["created"]?["timestamp"]?.int64)
            let since = try await alice.query(
                "Place", filters: [systemFilter("createdTimestamp", "GREATER_THAN_OR_EQUALS", .int(created), type: "TIMESTAMP")],
                sorts: [sort("recordName", ascending: false, system: true)], zone: "Z")
            #expect(since.recordNames == ["p4", "p3", "p2", "p1"])
        }
    }

    @Test(arguments: Engine.available) func severalSortKeysAscendingAndDescending(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let rows: [(String, Int, String)] = [("a", 2, "x"), ("b", 1, "y"), ("c", 2, "z"), ("d", 1, "w"), ("e", 2, "y")]
            _ = try await alice.modify(
                "Z",
                rows.map { typedOp("create", $0.0, "Row", ["group": (.int($0.1), "INT64"), "label": (.string($0.2), "STRING")]) })
            let groupThenLabelDescending = try await alice.query(
                "Row", sorts: [sort("group"), sort("label", ascending: false)], zone: "Z")
            #expect(groupThenLabelDescending.recordNames == ["b", "d", "c", "e", "a"])
            let groupDescendingThenLabel = try await alice.query(
                "Row", sorts: [sort("group", ascending: false), sort("label")], zone: "Z")
            #expect(groupDescendingThenLabel.recordNames == ["a", "e", "c", "d", "b"])
            // Paged two at a time, the order holds across pages.
            let paged = try await alice.queryAll("Row", sorts: [sort("group"), sort("label", ascending: false)], zone: "Z", limit: 2)
            #expect(paged == ["b", "d", "c", "e", "a"])
        }
    }

    @Test(arguments: Engine.available) func sortByDistanceFromARelativeLocation(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await Self.seedPlaces(alice)
            let nearest = try await alice.query(
                "Place", sorts: [sort("spot", relativeTo: location(38.0, -122.0))], zone: "Z")
            // p4 has no location: it sorts last.
            #expect(nearest.recordNames == ["p3", "p2", "p1", "p4"])
            let farthest = try await alice.query(
                "Place", filters: [filter("spot", "NEAR", location(37.0, -122.0), type: "LOCATION", distance: 500_000)],
                sorts: [sort("spot", ascending: false, relativeTo: location(37.0, -122.0))], zone: "Z", limit: 2)
            #expect(farthest.recordNames == ["p3", "p2"])
            let rest = try await alice.query(
                "Place", filters: [filter("spot", "NEAR", location(37.0, -122.0), type: "LOCATION", distance: 500_000)],
                sorts: [sort("spot", ascending: false, relativeTo: location(37.0, -122.0))], zone: "Z", limit: 2,
                marker: farthest["continuationMarker"]?.string)
            #expect(rest.recordNames == ["p1"])
        }
    }

    /// Keyset paging: records inserted before and after the current position between pages
    /// never make a page repeat or skip a record that existed when paging began.
    @Test(arguments: Engine.available, ["sorted ascending", "sorted descending", "unsorted", "filtered"])
    func pagesStayCorrectWhileRecordsAreInsertedBetweenPages(engine: Engine, _ shape: String) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("Z")
            let initial = (0..<40).map { index in
                typedOp("create", String(format: "r%03d", index * 10), "Item", ["order": (.int(index * 10), "INT64"), "kind": ("k", "STRING")])
            }
            _ = try await alice.modify("Z", initial)
            let sorts: [JSON]
            var filters: [JSON] = []
            switch shape {
            case "sorted ascending": sorts = [sort("order")]
            case "sorted descending": sorts = [sort("order", ascending: false)]
            case "filtered":
                sorts = [sort("order")]
                filters = [filter("kind", "EQUALS", "k")]
            default: sorts = []
            }
            var seen: [String] = []
            var marker: String?
            var inserted = 0
            repeat {
                let reply = try await alice.query("Item", filters: filters, sorts: sorts, zone: "Z", limit: 7, marker: marker)
                #expect(reply.status == 200, "\(reply.text)")
                seen += reply.recordNames
                marker = reply["continuationMarker"]?.string
                // Between pages: one record at the very start and one in the middle of what is left.
                let early = inserted * 2 + 1
                _ = try await alice.modify(
                    "Z",
                    [
                        typedOp("create", String(format: "r%03d", early), "Item", ["order": (.int(early), "INT64"), "kind": ("k", "STRING")]),
                        typedOp("create", String(format: "r%03dx", 395 - inserted), "Item", ["order": (.int(395 - inserted), "INT64"), "kind": ("k", "STRING")]),
                    ])
                inserted += 1
            } while marker != nil && inserted < 40
            #expect(marker == nil)
            #expect(Set(seen).count == seen.count, "a record came back twice: \(seen)")
            let original = Set((0..<40).map { String(format: "r%03d", $0 * 10) })
            #expect(original.isSubset(of: Set(seen)), "missed: \(original.subtracting(seen).sorted())")
            switch shape {
            case "sorted descending":
                let orders = seen.map { Int($0.dropFirst().prefix(3))! }
                #expect(orders == orders.sorted(by: >))
            case "unsorted":
                #expect(seen == seen.sorted())
            default:
                let orders = seen.map { Int($0.dropFirst().prefix(3))! }
                #expect(orders == orders.sorted())
            }
        }
    }

    @Test(arguments: Engine.available) func desiredKeysLimitTheFieldsReturned(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await Self.seedPlaces(alice)
            let reply = try await alice.query("Place", filters: [filter("rank", "EQUALS", 1)], zone: "Z", desiredKeys: ["name", "rank"])
            let fields = try #require(reply.records.first?["fields"]?.object)
            #expect(Set(fields.keys) == ["name", "rank"])
        }
    }

    @Test(arguments: Engine.available) func zoneWideQueriesSearchEveryZoneAndNameEachRecordsZone(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.createZone("A")
            _ = try await alice.createZone("B")
            _ = try await alice.modify("A", [op("create", "n1", "Note", fields: ["n": 1])])
            _ = try await alice.modify("B", [op("create", "n2", "Note", fields: ["n": 2])])
            _ = try await alice.modify("_defaultZone", [op("create", "n3", "Note", fields: ["n": 3])])
            let all = try await alice.query("Note", sorts: [sort("n")], zoneWide: true)
            #expect(all.recordNames == ["n1", "n2", "n3"])
            #expect(all.records.map { $0["zoneID"]?["zoneName"]?.string } == ["A", "B", "_defaultZone"])
            let onlyB = try await alice.query("Note", sorts: [sort("n")], zone: "B")
            #expect(onlyB.recordNames == ["n2"])
            let defaultZone = try await alice.query("Note", sorts: [sort("n")])
            #expect(defaultZone.recordNames == ["n3"])
            // Another user's database is separate.
            let bob = try await server.user("bob")
            _ = try await bob.modify("_defaultZone", [op("create", "b1", "Note", fields: ["n": 9])])
            #expect(try await alice.query("Note", sorts: [sort("n")], zoneWide: true).recordNames == ["n1", "n2", "n3"])
        }
    }

    @Test(arguments: Engine.available) func unknownZoneIsZoneNotFound(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await Self.seedPlaces(alice)
            let reply = try await alice.query("Place", zone: "Nope")
            #expect(reply.status == 404)
            #expect(reply.serverErrorCode == "ZONE_NOT_FOUND")
        }
    }

    @Test(arguments: Engine.available) func badFiltersAreBadRequestsNamingTheProblem(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await Self.seedPlaces(alice)
            let cases: [(filters: [JSON], sorts: [JSON], reason: String)] = [
                ([filter("rank", "ROUGHLY", 1)], [], "unknown comparator 'ROUGHLY'"),
                ([filter("height", "EQUALS", 1)], [], "no field 'height'"),
                ([filter("rank", "LIST_CONTAINS", 1)], [], "needs a list field"),
                ([filter("rank", "EQUALS", "one")], [], "fieldValue is STRING"),
                ([filter("spot", "NEAR", location(1, 2), type: "LOCATION")], [], "distance"),
                ([filter("rank", "CONTAINS_ALL_TOKENS", "x")], [], "STRING or STRING_LIST"),
                ([filter("rank", "EQUALS", ["a"], type: "STRING_LIST")], [], "fieldValue is STRING_LIST"),
                ([filter("spot", "IN", [location(1, 2)], type: "LOCATION_LIST")], [], "use NEAR"),
                ([], [sort("tags")], "cannot be sorted by"),
                ([], [sort("spot")], "relativeLocation"),
                ([systemFilter("etag", "EQUALS", "x")], [], "unknown system field 'etag'"),
            ]
            for testCase in cases {
                let reply = try await alice.query("Place", filters: testCase.filters, sorts: testCase.sorts, zone: "Z")
                #expect(reply.status == 400, "\(testCase.reason)")
                #expect(reply.serverErrorCode == "BAD_REQUEST")
                #expect(reply.reason.contains(testCase.reason), "\(reply.reason) should mention \(testCase.reason)")
            }
            let unknownType = try await alice.query("Planet", zone: "Z")
            #expect(unknownType.serverErrorCode == "BAD_REQUEST")
            #expect(unknownType.reason.contains("record type 'Planet'"))
            // A marker only continues the query that returned it.
            let first = try await alice.query("Place", sorts: [sort("rank")], zone: "Z", limit: 1)
            let marker = try #require(first["continuationMarker"]?.string)
            let other = try await alice.query("Place", sorts: [sort("rank", ascending: false)], zone: "Z", limit: 1, marker: marker)
            #expect(other.serverErrorCode == "BAD_REQUEST")
            #expect(other.reason.contains("different query"))
            let garbage = try await alice.query("Place", sorts: [sort("rank")], zone: "Z", marker: "not-a-marker")
            #expect(garbage.serverErrorCode == "BAD_REQUEST")
        }
    }

    @Test(arguments: Engine.available) func publicDatabaseIsQueryableWithoutSigningIn(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            _ = try await alice.modify(
                "_defaultZone",
                [op("create", "a1", "Article", fields: ["order": 1]), op("create", "a2", "Article", fields: ["order": 2])],
                scope: "public")
            let reader = server.anonymous()
            let reply = try await reader.query(
                "Article", filters: [filter("order", "GREATER_THAN", 1)], sorts: [sort("order")], scope: "public")
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.recordNames == ["a2"])
        }
    }

    @Test(arguments: Engine.available) func deletedAndUpdatedRecordsLeaveAndMoveInTheIndexes(engine: Engine) async throws {
        try await TestServer.with(engine) { server in
            let alice = try await server.user("alice")
            try await Self.seedPlaces(alice)
            #expect(try await alice.query("Place", filters: [filter("tags", "LIST_CONTAINS", "blue")], zone: "Z").recordNames == ["p1", "p2"])
            _ = try await alice.modify("Z", [op("forceDelete", "p1", "Place")])
            _ = try await alice.modify(
                "Z", [typedOp("forceUpdate", "p3", "Place", ["tags": (["blue"], "STRING_LIST"), "bio": ("sleepy", "STRING")])])
            #expect(try await alice.query("Place", filters: [filter("tags", "LIST_CONTAINS", "blue")], zone: "Z").recordNames == ["p2", "p3"])
            #expect(try await alice.query("Place", filters: [filter("bio", "CONTAINS_ANY_TOKENS", "fox")], zone: "Z").recordNames.isEmpty)
            #expect(try await alice.query("Place", filters: [filter("bio", "CONTAINS_ANY_TOKENS", "sleepy")], zone: "Z").recordNames == ["p3"])
            // Deleting the zone removes its records from every index.
            _ = try await alice.post("zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "Z"]]]]])
            _ = try await alice.createZone("Z")
            #expect(try await alice.query("Place", sorts: [sort("rank")], zone: "Z").recordNames.isEmpty)
        }
    }
}
