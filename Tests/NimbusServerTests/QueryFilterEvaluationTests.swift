import NimbusProtocol
import Testing

/// The one predicate evaluator (shared by query subscriptions and `records/query`).
@Suite("Query filter evaluation")
struct QueryFilterEvaluationTests {
    let record = Record(
        recordName: "article-7", recordType: "Article",
        fields: [
            "title": "Café Sync in Swift",
            "order": 42,
            "score": 3.5,
            "published": .timestamp(1_700_000_000_000),
            "tags": .list(elementType: .string, ["swift", "sync", "cloudkit"]),
            "ranks": .list(elementType: .int64, [1, 2, 3]),
            "author": .reference(Reference(recordName: "user-1")),
            "place": .location(Location(latitude: 52.52, longitude: 13.405)),
        ],
        created: RecordStamp(timestamp: 1_000, userRecordName: "_alice"),
        modified: RecordStamp(timestamp: 2_000, userRecordName: "_bob"))

    func matches(_ field: String, _ comparator: QueryFilter.Comparator, _ value: FieldValue, distance: Double? = nil) -> Bool {
        QueryFilter(field: field, comparator, value, distance: distance).matches(record)
    }

    @Test func equalityAndOrderingCompareWithinAKind() {
        #expect(matches("order", .equals, 42))
        #expect(matches("order", .equals, 42.0))
        #expect(!matches("order", .equals, "42"))
        #expect(matches("order", .notEquals, 41))
        #expect(!matches("order", .notEquals, "41"), "values of different kinds never match, negations included")
        #expect(matches("order", .lessThan, 43))
        #expect(!matches("order", .lessThan, 42))
        #expect(matches("order", .lessThanOrEquals, 42))
        #expect(matches("order", .greaterThan, 41.5))
        #expect(matches("order", .greaterThanOrEquals, 42))
        #expect(!matches("order", .greaterThanOrEquals, 43))
        #expect(matches("score", .greaterThan, 3))
        #expect(matches("published", .greaterThan, .timestamp(1_600_000_000_000)))
        #expect(matches("title", .greaterThan, "Apple"))
        #expect(!matches("title", .lessThan, "Apple"))
        #expect(matches("author", .equals, .reference(Reference(recordName: "user-1", action: .deleteSelf))))
    }

    @Test func aMissingFieldMatchesNothingNotEvenNegations() {
        for comparator in QueryFilter.Comparator.allCases {
            let value: FieldValue = comparator.takesList ? .list(elementType: .string, ["x"]) : "x"
            #expect(!matches("missing", comparator, value, distance: 10), "\(comparator)")
        }
    }

    @Test func inAndNotIn() {
        #expect(matches("order", .in, .list(elementType: .int64, [1, 42])))
        #expect(!matches("order", .in, .list(elementType: .int64, [1, 2])))
        #expect(matches("order", .notIn, .list(elementType: .int64, [1, 2])))
        #expect(!matches("order", .notIn, .list(elementType: .int64, [42])))
        #expect(matches("title", .in, .list(elementType: .string, ["Café Sync in Swift"])))
    }

    @Test func inOnAListFieldAsksForSomeMember() {
        // CloudKit's `ANY tags IN %@`: IN on a list field; NOT_IN on one asks for no member.
        #expect(matches("tags", .in, .list(elementType: .string, ["rust", "swift"])))
        #expect(!matches("tags", .in, .list(elementType: .string, ["rust", "go"])))
        #expect(matches("tags", .notIn, .list(elementType: .string, ["rust", "go"])))
        #expect(!matches("tags", .notIn, .list(elementType: .string, ["rust", "sync"])))
        #expect(matches("ranks", .in, .list(elementType: .int64, [3, 9])))
    }

    @Test func aTokenSearchWithoutAFieldLooksAtEveryStringField() throws {
        func search(_ comparator: QueryFilter.Comparator, _ text: String) -> Bool {
            QueryFilter(.searchableFields, comparator, .string(text)).matches(record)
        }
        #expect(search(.containsAllTokens, "cafe cloudkit"), "a title token and a tag token")
        #expect(!search(.containsAllTokens, "cafe rust"))
        #expect(search(.containsAnyTokens, "rust SYNC"))
        #expect(!search(.containsAllTokens, "42"), "numbers are not text")
        let textless = Record(recordName: "n", recordType: "Article", fields: ["order": 1])
        #expect(!QueryFilter(.searchableFields, .containsAnyTokens, "1").matches(textless))

        let json = try JSON.parse(
            #"{"recordType": "Article", "filterBy": [{"comparator": "CONTAINS_ALL_TOKENS", "fieldValue": {"value": "café swift"}}]}"#)
        let query = try RecordQuery(wire: WireReader(json, path: "query"))
        #expect(query.filters == [QueryFilter(.searchableFields, .containsAllTokens, "café swift")])
        #expect(query.matches(record))
        let noField = try JSON.parse(#"{"recordType": "A", "filterBy": [{"comparator": "EQUALS", "fieldValue": {"value": 1}}]}"#)
        let error = #expect(throws: CloudKitError.self) { try RecordQuery(wire: WireReader(noField, path: "query")) }
        #expect(error?.reason.contains("needs a fieldName or a systemFieldName") == true)
    }

    @Test func prefixesAreCaseSensitive() {
        #expect(matches("title", .beginsWith, "Café"))
        #expect(!matches("title", .beginsWith, "café"))
        #expect(matches("title", .notBeginsWith, "Sync"))
        #expect(!matches("order", .beginsWith, "4"))
        #expect(matches("tags", .listMemberBeginsWith, "clo"))
        #expect(!matches("tags", .listMemberBeginsWith, "x"))
        #expect(matches("tags", .notListMemberBeginsWith, "x"))
    }

    @Test func listComparators() {
        #expect(matches("tags", .listContains, "sync"))
        #expect(!matches("tags", .listContains, "rust"))
        #expect(matches("tags", .notListContains, "rust"))
        #expect(matches("ranks", .listContains, 2))
        #expect(matches("tags", .listContainsAll, .list(elementType: .string, ["swift", "sync"])))
        #expect(!matches("tags", .listContainsAll, .list(elementType: .string, ["swift", "rust"])))
        #expect(matches("tags", .notListContainsAll, .list(elementType: .string, ["swift", "rust"])))
        #expect(matches("tags", .notListContainsAny, .list(elementType: .string, ["rust", "go"])))
        #expect(!matches("tags", .notListContainsAny, .list(elementType: .string, ["rust", "swift"])))
        #expect(!matches("title", .listContains, "Café"), "list comparators need a list field")
    }

    @Test func tokensIgnoreCaseAndDiacritics() {
        #expect(matches("title", .containsAllTokens, "cafe SWIFT"))
        #expect(!matches("title", .containsAllTokens, "cafe rust"))
        #expect(matches("title", .containsAnyTokens, "rust swift"))
        #expect(!matches("title", .containsAnyTokens, "rust go"))
        #expect(matches("tags", .containsAnyTokens, "CloudKit"))
    }

    @Test func nearMeasuresMeters() {
        let potsdam = FieldValue.location(Location(latitude: 52.3906, longitude: 13.0645))
        #expect(matches("place", .near, potsdam, distance: 30_000))
        #expect(!matches("place", .near, potsdam, distance: 20_000))
    }

    @Test func systemFields() {
        #expect(QueryFilter(.system(.recordName), .beginsWith, "article-").matches(record))
        #expect(QueryFilter(.system(.createdUserRecordName), .equals, "_alice").matches(record))
        #expect(QueryFilter(.system(.modifiedUserRecordName), .equals, "_bob").matches(record))
        #expect(QueryFilter(.system(.modifiedTimestamp), .greaterThan, .timestamp(1_500)).matches(record))
        #expect(!QueryFilter(.system(.createdTimestamp), .greaterThan, .timestamp(1_500)).matches(record))
    }

    @Test func aQueryNeedsItsTypeAndEveryFilter() {
        let query = RecordQuery(
            recordType: "Article",
            filters: [QueryFilter(field: "order", .greaterThan, 40), QueryFilter(field: "tags", .listContains, "swift")])
        #expect(query.matches(record))
        #expect(!RecordQuery(recordType: "Bookmark").matches(record))
        var other = query
        other.filters.append(QueryFilter(field: "score", .lessThan, 1))
        #expect(!other.matches(record))
        var deleted = record
        deleted.deleted = true
        #expect(!query.matches(deleted))
    }

    @Test func filtersDecodeFromTheWireWithPathNamingErrors() throws {
        let json = try JSON.parse(
            #"{"recordType": "Article", "filterBy": [{"comparator": "IN", "fieldName": "order", "fieldValue": {"value": [1, 42], "type": "INT64_LIST"}}, {"comparator": "EQUALS", "systemFieldName": "___createdBy", "fieldValue": {"value": "_alice"}}]}"#)
        let query = try RecordQuery(wire: WireReader(json, path: "query"))
        #expect(query.matches(record))
        #expect(query.wireJSON["filterBy"]?.array?.count == 2)

        let bad = try JSON.parse(#"{"recordType": "A", "filterBy": [{"comparator": "LIKE", "fieldName": "x", "fieldValue": {"value": 1}}]}"#)
        let error = #expect(throws: CloudKitError.self) { try RecordQuery(wire: WireReader(bad, path: "query")) }
        #expect(error?.reason.contains("query.filterBy[0].comparator") == true)
        let notAList = try JSON.parse(#"{"recordType": "A", "filterBy": [{"comparator": "IN", "fieldName": "x", "fieldValue": {"value": 1}}]}"#)
        #expect(throws: CloudKitError.self) { try RecordQuery(wire: WireReader(notAList, path: "query")) }
    }
}
