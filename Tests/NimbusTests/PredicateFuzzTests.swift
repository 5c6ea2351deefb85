import Foundation
import Nimbus
import NimbusProtocol
import Testing

/// Fuzzes the SDK's `NSPredicate`-style parser with generated and mutated format strings
/// and arguments (seeded, so a failure reproduces): it must compile or throw a
/// ``PredicateFormatError`` that points into the format, never trap; and what it compiles
/// must be a query the server decodes to the same filters.
@Suite("Predicate parser fuzzing")
struct PredicateFuzzTests {
    /// Compiles `format`; on success checks the wire round trip, on failure the error.
    @discardableResult
    static func check(_ format: String, _ arguments: [any PredicateArgument]) -> Bool {
        let predicate: RecordQuery.Predicate
        do {
            predicate = try RecordQuery.Predicate(format: format, argumentArray: arguments)
        } catch {
            #expect(
                (1...(format.count + 1)).contains(error.column),
                "column \(error.column) is outside \(String(reflecting: format)): \(error)")
            #expect(!error.reason.isEmpty)
            #expect(error.format == format)
            _ = error.description
            return false
        }
        let query = RecordQuery(recordType: "Note", predicate: predicate)
        let text = query.wireJSON.serialized()
        let decoded = try? RecordQuery(wire: WireReader(try JSON.parse(text)))
        #expect(decoded == query, "the server does not decode \(String(reflecting: format)) as compiled: \(text)")
        return true
    }

    static let vocabulary = [
        "title", "order", "tags", "location", "recordID", "creationDate", "self", "#AND", "#title", "a_b", "é",
        "AND", "and", "&&", "OR", "||", "NOT", "!", "ANY", "SOME", "ALL", "NONE", "IN", "CONTAINS", "BEGINSWITH",
        "ENDSWITH", "LIKE", "MATCHES", "BETWEEN", "TOKENMATCHES", "TOKENMATCHES[cdl]", "[cd]", "[0]", "[",
        "TRUEPREDICATE", "FALSEPREDICATE", "YES", "NO", "TRUE", "nil", "NULL", "SUBQUERY", "FUNCTION", "@count", ".",
        "==", "=", "!=", "<>", "<", "<=", "=<", ">", ">=", "=>", "+", "-", "*", "**", "/", "(", ")", "{", "}", ",",
        "%@", "%K", "%d", "%ld", "%lld", "%f", "%lf", "%i", "%u", "%g", "%s", "%%", "%", "%l", "$var", "$", "#",
        "'text'", "\"text\"", "'it\\'s'", "'\\u00e9'", "'\\u12'", "'\\u'", "'\\uD800'", "'\\", "'unclosed", "\"",
        "0", "42", "-7", "3.25", ".5", "5.", "1e3", "1e", "1e-", "1e400", "0x1F", "0x", "0xFFFFFFFFFFFFFFFFF",
        "9223372036854775807", "9223372036854775808", "١٢", "½", "distanceToLocation:fromLocation:",
        "distanceToLocation:fromLocation:(location, %@)", "distanceToLocation:", ":", "😀", "\u{0}", "\t", "\n",
    ]

    static let validFormats = [
        "title == %@", "order > %d AND read == NO", "ANY tags IN %@", "tags CONTAINS %@", "title BEGINSWITH 'Sw'",
        "order BETWEEN {1, 5}", "NOT (name IN %@)", "NONE tags BEGINSWITH %@", "self CONTAINS %@",
        "distanceToLocation:fromLocation:(location, %@) < %f", "%K == %@", "TRUEPREDICATE", "recordID == %@",
        "creationDate < %@ && order >= 0x10", "#AND == 'x'", "allTokens TOKENMATCHES[cdl] %@", "%@ IN tags",
    ]

    @Test("generated format strings compile or fail with a located error")
    func generatedFormats() {
        var random = SplitMix64(seed: 0x5052_4544)
        var compiled = 0
        for _ in 0..<4_000 {
            let format: String
            if random.chance(0.5) {
                format = (0..<random.int(1..<9)).map { _ in random.pick(Self.vocabulary) }
                    .joined(separator: random.chance(0.9) ? " " : "")
            } else {
                // Comparisons joined with AND, from parts that mostly fit together.
                format = (0..<random.int(1...3)).map { _ in
                    [
                        random.pick(["", "", "", "ANY ", "NONE ", "NOT ", "ALL "]),
                        random.pick(["title", "order", "tags", "recordID", "creationDate", "%K", "self", "location"]),
                        random.pick([" == ", " != ", " < ", " >= ", " IN ", " CONTAINS ", " BEGINSWITH ", " BETWEEN "]),
                        random.pick(["%@", "%@", "%d", "%f", "'a'", "42", "-1.5", "{1, 2}", "{'a', 'b'}", "{1, 'a'}", "{}", "YES"]),
                    ].joined()
                }.joined(separator: random.pick([" AND ", " && ", " OR "]))
            }
            if Self.check(format, random.arguments()) { compiled += 1 }
        }
        #expect(compiled > 30, "the generator should make compilable predicates too (made \(compiled))")
    }

    @Test("mutated valid predicates compile or fail with a located error")
    func mutatedFormats() {
        var random = SplitMix64(seed: 0x4D55_5450)
        let pieces = Array("()[]{}%@K'\"\\,.!=<>&|#$: 0123456789eEx-AaNDOR") + ["é", "😀", "\u{301}", "\u{0}"]
        for _ in 0..<3_000 {
            var characters = Array(random.pick(Self.validFormats))
            for _ in 0..<random.int(1..<4) {
                let position = random.int(0...characters.count)
                switch random.int(0..<4) {
                case 0 where position < characters.count: characters[position] = random.pick(pieces)
                case 1: characters.insert(random.pick(pieces), at: position)
                case 2 where position < characters.count: characters.remove(at: position)
                default: characters.removeLast(random.int(0...characters.count))
                }
            }
            Self.check(String(characters), random.arguments())
        }
    }

    @Test("what the fuzzing found: values the server would refuse are refused when compiling")
    func valuesTheServerRefuses() throws {
        let refused: [(String, [any PredicateArgument])] = [
            ("order == %@", [Double.nan]), ("order < %f", [Double.infinity]), ("order IN %@", [[1.5, -.infinity]]),
            ("distanceToLocation:fromLocation:(place, %@) < 5", [Location(latitude: 91, longitude: 0)]),
            ("place == %@", [Location(latitude: 0, longitude: .nan)]), ("tags IN {1, 'a'}", []),
            ("tags IN %@", [[FieldValue.string("a"), .int64(1)]]), ("tags IN %@", [[FieldValue.list(elementType: .string, [])]]),
        ]
        for (format, arguments) in refused {
            #expect(throws: PredicateFormatError.self, "\(format)") {
                try RecordQuery.Predicate(format: format, argumentArray: arguments)
            }
            #expect(!Self.check(format, arguments))
        }
        // Integers among doubles are doubles; record names compare with what was given.
        let mixed = try RecordQuery.Predicate("order IN {1, 2.5}")
        #expect(mixed.filters == [QueryFilter(field: "order", .in, .list(elementType: .double, [.double(1), .double(2.5)]))])
        #expect(Self.check("recordID IN %@", [[1, 2]]))
        #expect(Self.check("recordID IN %@", [[Reference(recordName: "a")]]))
    }

    @Test("random text compiles or fails with a located error")
    func randomText() {
        var random = SplitMix64(seed: 0x5445_5854)
        for _ in 0..<3_000 {
            let scalars = (0..<random.int(0..<24)).compactMap { _ -> Unicode.Scalar? in
                random.chance(0.8) ? Unicode.Scalar(UInt8(random.int(0x20...0x7E))) : Unicode.Scalar(UInt32(random.int(0...0x2FFFF)))
            }
            Self.check(String(String.UnicodeScalarView(scalars)), random.arguments())
        }
    }
}

/// The arguments of the predicate fuzzing, drawn from a seeded generator.
extension SplitMix64 {
    /// Zero to three arguments of any kind the SDK takes.
    mutating func arguments() -> [any PredicateArgument] {
        (0..<int(0...3)).map { _ in argument() }
    }

    mutating func argument() -> any PredicateArgument {
        switch int(0..<14) {
        case 0: return pick(["swift", "", "title", "é", "a b", "%@", "😀"])
        case 1: return pick([0, 1, -1, Int.max, Int.min])
        case 2: return Int64(int(-100...100))
        case 3: return pick([0.5, -1e300, 1500.0, .infinity, -.infinity, .nan, .greatestFiniteMagnitude])
        case 4: return chance(0.5)
        case 5: return Date(timeIntervalSince1970: pick([0, 1_700_000_000.25, -1e12, 1e15]))
        case 6: return Data([0, 1, 255])
        case 7: return Location(latitude: pick([0, 52.5, 90, 91, -.infinity]), longitude: pick([0, 13.4, 180, .nan]))
        case 8: return Reference(recordName: pick(["user-1", ""]))
        case 9: return pick([["swift", "server"], [], ["a"]])
        case 10: return pick([[1, 2], [Int]()])
        case 11: return [0.5, 2]
        case 12: return FieldValue.list(elementType: .string, [])
        default: return [[1], [2]]
        }
    }
}
