import Foundation
import Nimbus
import NimbusProtocol
import Testing

/// A rejected predicate: the error code, the column it points at, and a phrase of its reason.
struct RejectedPredicate: Sendable, CustomTestStringConvertible {
    let format: String
    let arguments: [any PredicateArgument]
    let code: PredicateFormatError.Code
    let column: Int
    let reason: String

    init(
        _ format: String, _ arguments: any PredicateArgument..., code: PredicateFormatError.Code, column: Int,
        _ reason: String
    ) {
        self.format = format
        self.arguments = arguments
        self.code = code
        self.column = column
        self.reason = reason
    }

    var testDescription: String { format }
}

private let place = Location(latitude: 52.52, longitude: 13.405)

@Suite("Predicate errors")
struct PredicateFormatErrorTests {
    static let unsupported: [RejectedPredicate] = [
        RejectedPredicate("order > 5 OR read == NO", code: .unsupported, column: 11, "OR is not supported"),
        RejectedPredicate("order > 5 || read == NO", code: .unsupported, column: 11, "OR is not supported"),
        RejectedPredicate("(a == 1 OR b == 2)", code: .unsupported, column: 9, "OR is not supported"),
        RejectedPredicate("title ENDSWITH 'x'", code: .unsupported, column: 7, "ENDSWITH"),
        RejectedPredicate("title LIKE 'a*'", code: .unsupported, column: 7, "LIKE"),
        RejectedPredicate("title MATCHES '.*'", code: .unsupported, column: 7, "MATCHES"),
        RejectedPredicate("title BEGINSWITH[cd] 'a'", code: .unsupported, column: 17, "modifiers"),
        RejectedPredicate("title ==[c] 'a'", code: .unsupported, column: 9, "modifiers"),
        RejectedPredicate("title CONTAINS[d] 'a'", code: .unsupported, column: 15, "modifiers"),
        RejectedPredicate("allTokens TOKENMATCHES[x] 'a'", code: .unsupported, column: 23, "modifiers"),
        RejectedPredicate(
            "title TOKENMATCHES 'a'", code: .unsupported, column: 7, "TOKENMATCHES works only on allTokens"),
        RejectedPredicate("NOT (order > 5)", code: .unsupported, column: 1, "NOT of >"),
        RejectedPredicate("read == NO AND !(order <= 5)", code: .unsupported, column: 16, "NOT of <="),
        RejectedPredicate("NOT (order > 1 AND order < 5)", code: .unsupported, column: 1, "NOT cannot negate an AND"),
        RejectedPredicate("NOT self CONTAINS 'x'", code: .unsupported, column: 1, "token search"),
        RejectedPredicate("NOT allTokens TOKENMATCHES[cdl] 'x'", code: .unsupported, column: 1, "token search"),
        RejectedPredicate(
            "NOT distanceToLocation:fromLocation:(location, %@) < 5", place, code: .unsupported, column: 1,
            "distanceToLocation"),
        RejectedPredicate("NOT (order BETWEEN {1, 2})", code: .unsupported, column: 1, "BETWEEN"),
        RejectedPredicate("NOT TRUEPREDICATE", code: .unsupported, column: 1, "matches no record"),
        RejectedPredicate("order > 1 AND FALSEPREDICATE", code: .unsupported, column: 15, "FALSEPREDICATE"),
        RejectedPredicate("ALL tags == 'x'", code: .unsupported, column: 1, "ALL is not supported"),
        RejectedPredicate("ANY tags > 'a'", code: .unsupported, column: 10, "ANY works with ==, IN and BEGINSWITH"),
        RejectedPredicate("ANY recordID == 'a'", code: .unsupported, column: 5, "system fields are not lists"),
        RejectedPredicate("creationDate CONTAINS 1", code: .unsupported, column: 1, "system fields are not lists"),
        RejectedPredicate("ANY %@ IN tags", "a", code: .unsupported, column: 1, "key on the left"),
        RejectedPredicate("%@ BEGINSWITH title", "a", code: .unsupported, column: 4, "needs the key on its left"),
        RejectedPredicate("{'a'} IN tags", code: .unsupported, column: 1, "a list IN a list field"),
        RejectedPredicate("author.name == 'x'", code: .unsupported, column: 7, "key paths"),
        RejectedPredicate("%K == 'x'", "author.name", code: .unsupported, column: 1, "key paths"),
        RejectedPredicate("tags.@count > 1", code: .unsupported, column: 5, "key paths"),
        RejectedPredicate("@count > 1", code: .unsupported, column: 1, "collection operators"),
        RejectedPredicate("tags[0] == 'a'", code: .unsupported, column: 5, "subscripts"),
        RejectedPredicate("name == $NAME", code: .unsupported, column: 9, "variables"),
        RejectedPredicate("name == nil", code: .unsupported, column: 9, "nil is not supported"),
        RejectedPredicate("SUBQUERY(tags, $t, $t == 'a').@count > 0", code: .unsupported, column: 1, "SUBQUERY"),
        RejectedPredicate("order + 1 > 5", code: .unsupported, column: 7, "arithmetic"),
        RejectedPredicate("order > 5 * 2", code: .unsupported, column: 11, "arithmetic"),
        RejectedPredicate("title == subtitle", code: .unsupported, column: 7, "another field"),
        RejectedPredicate("1 == 1", code: .unsupported, column: 3, "has no field"),
        RejectedPredicate("self == 'a'", code: .unsupported, column: 1, "self supports only CONTAINS"),
        RejectedPredicate(
            "distanceToLocation:fromLocation:(location, %@) > 5", place, code: .unsupported, column: 48, "< or <="),
        RejectedPredicate("length:(title) < 5", code: .unsupported, column: 1, "function 'length:'"),
    ]

    static let malformed: [RejectedPredicate] = [
        RejectedPredicate("title ==", code: .syntax, column: 9, "expected a key or a value at the end"),
        RejectedPredicate("title == 'abc", code: .syntax, column: 10, "never closed"),
        RejectedPredicate("(order > 1", code: .syntax, column: 11, "expected ')'"),
        RejectedPredicate("order > 1)", code: .syntax, column: 10, "expected AND or the end"),
        RejectedPredicate("order > 5 read == NO", code: .syntax, column: 11, "expected AND or the end"),
        RejectedPredicate("order 5", code: .syntax, column: 7, "expected an operator"),
        RejectedPredicate("title", code: .syntax, column: 6, "expected an operator"),
        RejectedPredicate("read AND order > 1", code: .syntax, column: 6, "alone is not a condition"),
        RejectedPredicate("== 5", code: .syntax, column: 1, "expected a key or a value"),
        RejectedPredicate("order > 5 AND", code: .syntax, column: 14, "at the end"),
        RejectedPredicate("", code: .syntax, column: 1, "at the end"),
        RejectedPredicate("in == 1", code: .syntax, column: 1, "keyword IN"),
        RejectedPredicate("title == %s", code: .syntax, column: 10, "not a predicate format specifier"),
        RejectedPredicate("title == 'a' ~ 'b'", code: .syntax, column: 14, "unexpected character"),
        RejectedPredicate("order > 99999999999999999999", code: .syntax, column: 9, "64-bit"),
        RejectedPredicate("name IN {'a', 'b'", code: .syntax, column: 18, "to close the list"),
        RejectedPredicate("title == '\\u12'", code: .syntax, column: 11, "four hexadecimal digits"),
        RejectedPredicate(
            "distanceToLocation:fromLocation:(location %@) < 1", place, code: .syntax, column: 43, "expected ','"),
        RejectedPredicate("_private == 1", code: .invalidKey, column: 1, "not a field name"),
        RejectedPredicate("%K == 1", "bad key", code: .invalidKey, column: 1, "not a field name"),
        RejectedPredicate("%K == 1", "", code: .invalidKey, column: 1, "not a field name"),
    ]

    static let mismatchedValues: [RejectedPredicate] = [
        RejectedPredicate("title BEGINSWITH 5", code: .typeMismatch, column: 18, "takes a string, not a INT64"),
        RejectedPredicate("name IN 'x'", code: .typeMismatch, column: 9, "takes a list"),
        RejectedPredicate("ANY tags IN %@", "x", code: .typeMismatch, column: 13, "takes a list"),
        RejectedPredicate("ANY tags == %@", ["x"], code: .typeMismatch, column: 13, "not a list"),
        RejectedPredicate("name IN %@", [["a"]], code: .typeMismatch, column: 9, "not a list of lists"),
        RejectedPredicate("order > %@", place, code: .typeMismatch, column: 9, "can't order locations"),
        RejectedPredicate("order > %@", Data([1]), code: .typeMismatch, column: 9, "not a BYTES"),
        RejectedPredicate("order BETWEEN %@", [1], code: .typeMismatch, column: 15, "two bounds"),
        RejectedPredicate("order BETWEEN {1, 2, 3}", code: .typeMismatch, column: 15, "two bounds"),
        RejectedPredicate("order BETWEEN 1", code: .typeMismatch, column: 15, "two bounds"),
        RejectedPredicate("self CONTAINS 5", code: .typeMismatch, column: 15, "token search takes a string"),
        RejectedPredicate(
            "distanceToLocation:fromLocation:(location, 'x') < 5", code: .typeMismatch, column: 44, "from a Location"),
        RejectedPredicate(
            "distanceToLocation:fromLocation:(location, %@) < 'far'", place, code: .typeMismatch, column: 50,
            "number of meters"),
        RejectedPredicate(
            "distanceToLocation:fromLocation:(location, %@) < -1", place, code: .typeMismatch, column: 50,
            "can't be negative"),
    ]

    static let arguments: [RejectedPredicate] = [
        RejectedPredicate("title == %@", code: .argumentCount, column: 10, "%@ has no argument: 0 given"),
        RejectedPredicate(
            "a == %@ AND b == %d", "x", code: .argumentCount, column: 18, "%d has no argument: 1 given"),
        RejectedPredicate(
            "title == %@", "a", "b", code: .argumentCount, column: 12, "2 arguments given, but the format uses 1"),
        RejectedPredicate(
            "title == 'a'", "unused", code: .argumentCount, column: 13, "1 argument given, but the format uses 0"),
        RejectedPredicate(
            "order > %d", "5", code: .typeMismatch, column: 9, "%d needs an integer; argument 1 is a STRING"),
        RejectedPredicate(
            "order > %d", 5.5, code: .typeMismatch, column: 9, "%d needs an integer; argument 1 is a DOUBLE"),
        RejectedPredicate("order > %ld", Date(), code: .typeMismatch, column: 9, "argument 1 is a TIMESTAMP"),
        RejectedPredicate("score > %f", "x", code: .typeMismatch, column: 9, "%f needs a number"),
        RejectedPredicate("a == 1 AND %K == 1", 5, code: .typeMismatch, column: 12, "%K needs a key name"),
    ]

    @Test(arguments: unsupported + malformed + mismatchedValues + arguments)
    func isRejectedWhereItGoesWrong(_ example: RejectedPredicate) {
        let error = #expect(throws: PredicateFormatError.self) {
            try Query.Predicate(format: example.format, argumentArray: example.arguments)
        }
        guard let error else { return }
        #expect(error.code == example.code, "\(error)")
        #expect(error.column == example.column, "\(error)")
        #expect(error.reason.contains(example.reason), "\(error)")
        #expect(error.format == example.format)
    }

    @Test func errorsSayWhatCloudKitSupportsInstead() {
        func suggestion(_ format: String, _ arguments: any PredicateArgument...) -> String? {
            do {
                _ = try Query.Predicate(format: format, argumentArray: arguments)
                return nil
            } catch {
                return error.suggestion
            }
        }
        #expect(suggestion("a == 1 OR a == 2")?.contains("IN") == true)
        #expect(suggestion("title ENDSWITH 'x'")?.contains("BEGINSWITH") == true)
        #expect(suggestion("title BEGINSWITH[cd] 'x'")?.contains("self CONTAINS") == true)
        #expect(suggestion("NOT (order > 5)")?.contains("<=") == true)
        #expect(suggestion("NOT (order >= 5)")?.contains("(<)") == true)
        #expect(suggestion("in == 1")?.contains("#in") == true)
        #expect(suggestion("name == $NAME")?.contains("%@") == true)
    }

    @Test func theDescriptionPointsAtTheColumn() {
        let error = #expect(throws: PredicateFormatError.self) {
            try Query(recordType: "Article", predicate: "order > 5 OR read == NO")
        }
        #expect(
            error?.description == """
                column 11: OR is not supported: CloudKit combines conditions with AND only
                Instead: run one query per alternative and merge the results, or, for alternatives on one field, \
                use IN with a list (name IN %@)
                  order > 5 OR read == NO
                            ^
                """)
    }
}
