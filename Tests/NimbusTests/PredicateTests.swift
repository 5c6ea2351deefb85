import Foundation
import Nimbus
import NimbusProtocol
import Testing

/// A supported predicate form and the exact filters it compiles to.
struct PredicateCase: Sendable, CustomTestStringConvertible {
    let format: String
    let arguments: [any PredicateArgument]
    let filters: [QueryFilter]

    init(_ format: String, _ arguments: any PredicateArgument..., filters: [QueryFilter]) {
        self.format = format
        self.arguments = arguments
        self.filters = filters
    }

    var testDescription: String { format }
}

private let place = Location(latitude: 52.52, longitude: 13.405)
private let date = Date(timeIntervalSince1970: 1_700_000_000.25)
private let author = Reference(recordName: "user-1", action: .deleteSelf)
private func strings(_ values: String...) -> FieldValue { .list(elementType: .string, values.map(FieldValue.string)) }
private func ints(_ values: Int64...) -> FieldValue { .list(elementType: .int64, values.map(FieldValue.int64)) }

private func field(_ name: String, _ comparator: QueryFilter.Comparator, _ value: FieldValue, distance: Double? = nil)
    -> QueryFilter
{
    QueryFilter(field: name, comparator, value, distance: distance)
}

private func system(_ name: QueryFilter.SystemField, _ comparator: QueryFilter.Comparator, _ value: FieldValue)
    -> QueryFilter
{
    QueryFilter(.system(name), comparator, value)
}

@Suite("Predicate format strings")
struct PredicateTests {
    static let issueExamples: [PredicateCase] = [
        PredicateCase("title BEGINSWITH %@", "Swi", filters: [field("title", .beginsWith, "Swi")]),
        PredicateCase(
            "order > %d AND read == NO", 41,
            filters: [field("order", .greaterThan, 41), field("read", .equals, 0)]),
        PredicateCase(
            "ANY tags IN %@", ["swift", "server"], filters: [field("tags", .in, strings("swift", "server"))]),
        PredicateCase("tags CONTAINS %@", "swift", filters: [field("tags", .listContains, "swift")]),
        PredicateCase(
            "distanceToLocation:fromLocation:(location, %@) < %f", place, 1500.0,
            filters: [field("location", .near, .location(place), distance: 1500)]),
        PredicateCase(
            "self CONTAINS %@", "sync swift",
            filters: [QueryFilter(.searchableFields, .containsAllTokens, "sync swift")]),
        PredicateCase("name IN %@", ["Ada", "Grace"], filters: [field("name", .in, strings("Ada", "Grace"))]),
        PredicateCase("NOT (name IN %@)", ["Ada"], filters: [field("name", .notIn, strings("Ada"))]),
    ]

    static let comparisons: [PredicateCase] = [
        PredicateCase("title == 'Sync'", filters: [field("title", .equals, "Sync")]),
        PredicateCase("title = \"Sync\"", filters: [field("title", .equals, "Sync")]),
        PredicateCase("title != 'Sync'", filters: [field("title", .notEquals, "Sync")]),
        PredicateCase("title <> 'Sync'", filters: [field("title", .notEquals, "Sync")]),
        PredicateCase("order < 5", filters: [field("order", .lessThan, 5)]),
        PredicateCase("order <= 5", filters: [field("order", .lessThanOrEquals, 5)]),
        PredicateCase("order =< 5", filters: [field("order", .lessThanOrEquals, 5)]),
        PredicateCase("order > 5", filters: [field("order", .greaterThan, 5)]),
        PredicateCase("order >= 5", filters: [field("order", .greaterThanOrEquals, 5)]),
        PredicateCase("order => 5", filters: [field("order", .greaterThanOrEquals, 5)]),
        PredicateCase("5 < order", filters: [field("order", .greaterThan, 5)]),
        PredicateCase("5 >= order", filters: [field("order", .lessThanOrEquals, 5)]),
        PredicateCase("'Sync' == title", filters: [field("title", .equals, "Sync")]),
        PredicateCase(
            "order BETWEEN {1, 10}",
            filters: [field("order", .greaterThanOrEquals, 1), field("order", .lessThanOrEquals, 10)]),
        PredicateCase(
            "addedAt BETWEEN %@", [date, date.addingTimeInterval(60)],
            filters: [
                field("addedAt", .greaterThanOrEquals, .timestamp(1_700_000_000_250)),
                field("addedAt", .lessThanOrEquals, .timestamp(1_700_000_060_250)),
            ]),
        PredicateCase(
            "order BETWEEN {%d, %d}", 1, 2,
            filters: [field("order", .greaterThanOrEquals, 1), field("order", .lessThanOrEquals, 2)]),
        PredicateCase("NOT (title == 'a')", filters: [field("title", .notEquals, "a")]),
        PredicateCase("NOT title != 'a'", filters: [field("title", .equals, "a")]),
        PredicateCase("NOT NOT (order == 1)", filters: [field("order", .equals, 1)]),
        PredicateCase("title BEGINSWITH 'Sw'", filters: [field("title", .beginsWith, "Sw")]),
        PredicateCase("NOT title BEGINSWITH 'Sw'", filters: [field("title", .notBeginsWith, "Sw")]),
        PredicateCase("!(title BEGINSWITH 'Sw')", filters: [field("title", .notBeginsWith, "Sw")]),
        PredicateCase("name IN {'Ada', 'Grace'}", filters: [field("name", .in, strings("Ada", "Grace"))]),
        PredicateCase("order IN {1, 2}", filters: [field("order", .in, ints(1, 2))]),
    ]

    static let lists: [PredicateCase] = [
        PredicateCase("%@ IN tags", "swift", filters: [field("tags", .listContains, "swift")]),
        PredicateCase("NOT (%@ IN tags)", "swift", filters: [field("tags", .notListContains, "swift")]),
        PredicateCase("ANY tags == 'swift'", filters: [field("tags", .listContains, "swift")]),
        PredicateCase("SOME tags = 'swift'", filters: [field("tags", .listContains, "swift")]),
        PredicateCase("NONE tags == 'swift'", filters: [field("tags", .notListContains, "swift")]),
        PredicateCase("NOT (tags CONTAINS 'swift')", filters: [field("tags", .notListContains, "swift")]),
        PredicateCase("tags CONTAINS %@", ["a", "b"], filters: [field("tags", .listContainsAll, strings("a", "b"))]),
        PredicateCase(
            "NOT (tags CONTAINS %@)", ["a", "b"], filters: [field("tags", .notListContainsAll, strings("a", "b"))]),
        PredicateCase("NONE tags IN %@", ["a"], filters: [field("tags", .notListContainsAny, strings("a"))]),
        PredicateCase("NOT (ANY tags IN %@)", ["a"], filters: [field("tags", .notListContainsAny, strings("a"))]),
        PredicateCase("ANY tags BEGINSWITH 'sw'", filters: [field("tags", .listMemberBeginsWith, "sw")]),
        PredicateCase("NONE tags BEGINSWITH 'sw'", filters: [field("tags", .notListMemberBeginsWith, "sw")]),
        PredicateCase("NOT ANY tags BEGINSWITH 'sw'", filters: [field("tags", .notListMemberBeginsWith, "sw")]),
        PredicateCase("NOT NONE tags == 'x'", filters: [field("tags", .listContains, "x")]),
    ]

    static let locationsAndTokens: [PredicateCase] = [
        PredicateCase(
            "distanceToLocation:fromLocation:(%@, location) <= 2000", place,
            filters: [field("location", .near, .location(place), distance: 2000)]),
        PredicateCase(
            "%f > distanceToLocation:fromLocation:(location, %@)", 250.5, place,
            filters: [field("location", .near, .location(place), distance: 250.5)]),
        PredicateCase(
            "distanceToLocation:fromLocation:(%K, %@) < %d", "where", place, 10,
            filters: [field("where", .near, .location(place), distance: 10)]),
        PredicateCase(
            "SELF contains 'blue'", filters: [QueryFilter(.searchableFields, .containsAllTokens, "blue")]),
        PredicateCase(
            "allTokens TOKENMATCHES[cdl] %@", "grill",
            filters: [QueryFilter(.searchableFields, .containsAllTokens, "grill")]),
        PredicateCase(
            "self CONTAINS 'blue' AND self CONTAINS 'green'",
            filters: [
                QueryFilter(.searchableFields, .containsAllTokens, "blue"),
                QueryFilter(.searchableFields, .containsAllTokens, "green"),
            ]),
    ]

    static let valuesAndKeys: [PredicateCase] = [
        PredicateCase("TRUEPREDICATE", filters: []),
        PredicateCase("TRUEPREDICATE AND order > 1", filters: [field("order", .greaterThan, 1)]),
        PredicateCase("%K == %@", "title", "Sync", filters: [field("title", .equals, "Sync")]),
        PredicateCase("title == 'It\\'s \\\"here\\\"\\n'", filters: [field("title", .equals, "It's \"here\"\n")]),
        PredicateCase("title == '\\u00e9t\\u00e9'", filters: [field("title", .equals, "été")]),
        PredicateCase("title == '%@'", filters: [field("title", .equals, "%@")]),
        PredicateCase("score > 3.5", filters: [field("score", .greaterThan, 3.5)]),
        PredicateCase("score > .5", filters: [field("score", .greaterThan, 0.5)]),
        PredicateCase("score < 1e3", filters: [field("score", .lessThan, 1000.0)]),
        PredicateCase("order > -2", filters: [field("order", .greaterThan, -2)]),
        PredicateCase("score > -2.5E-1", filters: [field("score", .greaterThan, -0.25)]),
        PredicateCase("flags == 0x1F", filters: [field("flags", .equals, 31)]),
        PredicateCase(
            "a == YES AND b == NO AND c == TRUE AND d == false",
            filters: [field("a", .equals, 1), field("b", .equals, 0), field("c", .equals, 1), field("d", .equals, 0)]),
        PredicateCase("read == %@", true, filters: [field("read", .equals, 1)]),
        PredicateCase("addedAt > %@", date, filters: [field("addedAt", .greaterThan, .timestamp(1_700_000_000_250))]),
        PredicateCase("blob == %@", Data([1, 2]), filters: [field("blob", .equals, .bytes(Data([1, 2])))]),
        PredicateCase("author == %@", author, filters: [field("author", .equals, .reference(author))]),
        PredicateCase(
            "parent == %@", Record(recordType: "Folder", recordID: Record.ID(recordName: "f1")),
            filters: [field("parent", .equals, .reference(Reference(recordName: "f1")))]),
        PredicateCase(
            "parent == %@", Record.ID(recordName: "f2", zoneID: ZoneID(zoneName: "Files")),
            filters: [
                field("parent", .equals, .reference(Reference(recordName: "f2", zoneID: ZoneID(zoneName: "Files"))))
            ]),
        PredicateCase("raw == %@", FieldValue.double(2), filters: [field("raw", .equals, .double(2))]),
        PredicateCase(
            "order > %ld AND rank < %lld", 1, Int64(2),
            filters: [
                field("order", .greaterThan, 1), field("rank", .lessThan, 2),
            ]),
        PredicateCase("score > %f", 3, filters: [field("score", .greaterThan, .double(3))]),
        PredicateCase("score > %i", 3, filters: [field("score", .greaterThan, 3)]),
        PredicateCase("#size == 1 AND #in == 2", filters: [field("size", .equals, 1), field("in", .equals, 2)]),
        PredicateCase(
            "title beginswith 'a' and read == no && order > 1",
            filters: [field("title", .beginsWith, "a"), field("read", .equals, 0), field("order", .greaterThan, 1)]),
        PredicateCase(
            "((order > 1) AND (order < 5 AND (read == NO)))",
            filters: [field("order", .greaterThan, 1), field("order", .lessThan, 5), field("read", .equals, 0)]),
        PredicateCase("recordID == %@", Record.ID(recordName: "a1"), filters: [system(.recordName, .equals, "a1")]),
        PredicateCase(
            "recordID IN %@", [Record.ID(recordName: "a1"), Record.ID(recordName: "a2")],
            filters: [system(.recordName, .in, strings("a1", "a2"))]),
        PredicateCase(
            "creationDate > %@", date, filters: [system(.createdTimestamp, .greaterThan, .timestamp(1_700_000_000_250))]
        ),
        PredicateCase(
            "modificationDate <= %@", date,
            filters: [system(.modifiedTimestamp, .lessThanOrEquals, .timestamp(1_700_000_000_250))]),
        PredicateCase(
            "creatorUserRecordID == %@", Reference(recordName: "_alice"),
            filters: [system(.createdUserRecordName, .equals, "_alice")]),
        PredicateCase(
            "lastModifiedUserRecordID != %@", "_bob", filters: [system(.modifiedUserRecordName, .notEquals, "_bob")]),
        PredicateCase("___createTime > 5", filters: [system(.createdTimestamp, .greaterThan, 5)]),
        PredicateCase("___recordID BEGINSWITH 'art'", filters: [system(.recordName, .beginsWith, "art")]),
    ]

    @Test(arguments: issueExamples + comparisons + lists + locationsAndTokens + valuesAndKeys)
    func compilesToTheExactFilters(_ example: PredicateCase) throws {
        let predicate = try Query.Predicate(format: example.format, argumentArray: example.arguments)
        #expect(predicate.filters == example.filters)
        #expect(predicate.format == example.format)
    }

    @Test func queriesTakeAPredicateOrAFormat() throws {
        let query = try Query(recordType: "Article", predicate: "order > %d AND read == NO", 41)
        #expect(
            query
                == Query(recordType: "Article", filters: [field("order", .greaterThan, 41), field("read", .equals, 0)]))

        let sorted = try Query(
            recordType: "Article", predicate: "ANY tags IN %@", ["swift"], sortDescriptors: [.ascending("order")])
        #expect(sorted.filters == [field("tags", .in, strings("swift"))])
        #expect(sorted.sortDescriptors == [.ascending("order")])

        let predicate = try Query.Predicate("title BEGINSWITH %@", "Swi")
        #expect(Query(recordType: "Article", predicate: predicate).filters == [field("title", .beginsWith, "Swi")])
        #expect(Query(recordType: "Article", predicate: .all).filters.isEmpty)
        #expect(Query.Predicate.all.format == "TRUEPREDICATE")
        #expect(predicate.description == "title BEGINSWITH %@")
    }

    @Test func aTokenSearchTravelsWithoutAFieldName() throws {
        let query = try Query(recordType: "Article", predicate: "self CONTAINS %@ AND order > 1", "sync")
        let wire = query.wireJSON
        let token = try #require(wire["filterBy"]?.array?.first)
        #expect(token["fieldName"] == nil)
        #expect(token["systemFieldName"] == nil)
        #expect(token["comparator"]?.string == "CONTAINS_ALL_TOKENS")
        #expect(try RecordQuery(wire: WireReader(wire)) == query)
    }
}
