import NimbusProtocol

/// The syntax tree of a predicate, before it is checked against what CloudKit supports.
indirect enum PredicateNode: Sendable, Equatable {
    /// TRUEPREDICATE (`true`) or FALSEPREDICATE (`false`).
    case constant(Bool, column: Int)
    case and([PredicateNode])
    case not(PredicateNode, column: Int)
    case comparison(PredicateComparison)
}

/// `[quantifier] lhs operator rhs`.
struct PredicateComparison: Sendable, Equatable {
    enum Quantifier: String, Sendable {
        case anyMember = "ANY"
        case allMembers = "ALL"
        case noMember = "NONE"
    }

    enum Operator: String, Sendable {
        case equals = "=="
        case notEquals = "!="
        case lessThan = "<"
        case lessThanOrEquals = "<="
        case greaterThan = ">"
        case greaterThanOrEquals = ">="
        case `in` = "IN"
        case contains = "CONTAINS"
        case beginsWith = "BEGINSWITH"
        case between = "BETWEEN"
        case tokenMatches = "TOKENMATCHES"

        /// The operator with its operands swapped (`5 < order` is `order > 5`), when it has one.
        var mirrored: Operator? {
            switch self {
            case .equals, .notEquals: return self
            case .lessThan: return .greaterThan
            case .lessThanOrEquals: return .greaterThanOrEquals
            case .greaterThan: return .lessThan
            case .greaterThanOrEquals: return .lessThanOrEquals
            default: return nil
            }
        }
    }

    var quantifier: Quantifier?
    var quantifierColumn: Int
    var lhs: PredicateOperand
    var op: Operator
    var operatorColumn: Int
    var rhs: PredicateOperand
}

/// One side of a comparison.
enum PredicateOperand: Sendable, Equatable {
    /// A key, as written or substituted by `%K`.
    case key(String, column: Int)
    /// `self`: every searchable field, for token search.
    case `self`(column: Int)
    /// A literal or an argument; lists included.
    case value(FieldValue, column: Int)
    /// `distanceToLocation:fromLocation:(key, location)`.
    case distance(key: String, location: Location, column: Int)

    var column: Int {
        switch self {
        case .key(_, let column), .self(let column), .value(_, let column), .distance(_, _, let column): return column
        }
    }
}

/// Reads a predicate format string into a ``PredicateNode``, substituting the arguments.
///
/// The grammar is `NSPredicate`'s, as far as CloudKit uses it; the constructs CloudKit never
/// supports (OR, ENDSWITH, LIKE, key paths, aggregates, variables, subqueries, arithmetic)
/// are recognised here so that the error names them where they stand.
struct PredicateParser {
    private let format: String
    private let tokens: [PredicateToken]
    private let arguments: [FieldValue]
    private var position = 0
    private var nextArgument = 0

    init(format: String, arguments: [FieldValue]) throws(PredicateFormatError) {
        self.format = format
        self.tokens = try PredicateLexer.tokens(of: format)
        self.arguments = arguments
    }

    /// Words that are keywords, not keys (write `#word` for a key spelled like one).
    static let reservedWords: Set<String> = [
        "AND", "OR", "NOT", "ANY", "SOME", "ALL", "NONE", "IN", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE",
        "MATCHES", "BETWEEN", "TRUEPREDICATE", "FALSEPREDICATE", "YES", "NO", "TRUE", "FALSE", "NULL", "NIL",
        "SELF", "SUBQUERY", "FUNCTION", "TOKENMATCHES", "FIRST", "LAST", "SIZE", "CAST",
    ]

    mutating func parse() throws(PredicateFormatError) -> PredicateNode {
        let node = try parseConjunction()
        let token = current
        guard token.kind == .end else {
            if token.keyword == "OR" || token.isSymbol("||") { throw orError(token) }
            throw syntax("expected AND or the end of the predicate, found \(token.quoted)", at: token.column)
        }
        guard nextArgument == arguments.count else {
            throw PredicateFormatError(
                .argumentCount, column: format.count + 1,
                reason: "\(Self.count(arguments.count, "argument")) given, but the format uses \(nextArgument)",
                format: format)
        }
        return node
    }

    // MARK: - Errors

    static func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }

    private func syntax(_ reason: String, at column: Int, suggestion: String? = nil) -> PredicateFormatError {
        PredicateFormatError(.syntax, column: column, reason: reason, suggestion: suggestion, format: format)
    }

    private func unsupported(_ reason: String, at column: Int, suggestion: String? = nil) -> PredicateFormatError {
        PredicateFormatError(.unsupported, column: column, reason: reason, suggestion: suggestion, format: format)
    }

    private func orError(_ token: PredicateToken) -> PredicateFormatError {
        unsupported(
            "OR is not supported: CloudKit combines conditions with AND only", at: token.column,
            suggestion: "run one query per alternative and merge the results, or, for alternatives on one field, "
                + "use IN with a list (name IN %@)")
    }

    // MARK: - Tokens

    private var current: PredicateToken { tokens[position] }

    private mutating func advance() -> PredicateToken {
        let token = tokens[position]
        if token.kind != .end { position += 1 }
        return token
    }

    private mutating func expect(_ symbol: String, _ what: String) throws(PredicateFormatError) {
        guard current.isSymbol(symbol) else {
            throw syntax("expected '\(symbol)' \(what), found \(current.quoted)", at: current.column)
        }
        position += 1
    }

    // MARK: - Predicates

    private mutating func parseConjunction() throws(PredicateFormatError) -> PredicateNode {
        var nodes = [try parseUnary()]
        while current.keyword == "AND" || current.isSymbol("&&") {
            position += 1
            nodes.append(try parseUnary())
        }
        if current.keyword == "OR" || current.isSymbol("||") { throw orError(current) }
        return nodes.count == 1 ? nodes[0] : .and(nodes)
    }

    private mutating func parseUnary() throws(PredicateFormatError) -> PredicateNode {
        let token = current
        if token.keyword == "NOT" || token.isSymbol("!") {
            position += 1
            return .not(try parseUnary(), column: token.column)
        }
        if token.isSymbol("(") {
            position += 1
            let node = try parseConjunction()
            try expect(")", "to close the '(' at column \(token.column)")
            return node
        }
        if token.keyword == "TRUEPREDICATE" || token.keyword == "FALSEPREDICATE" {
            position += 1
            return .constant(token.keyword == "TRUEPREDICATE", column: token.column)
        }
        return .comparison(try parseComparison())
    }

    private mutating func parseComparison() throws(PredicateFormatError) -> PredicateComparison {
        var quantifier: PredicateComparison.Quantifier?
        let quantifierColumn = current.column
        switch current.keyword {
        case "ANY", "SOME": quantifier = .anyMember
        case "ALL": quantifier = .allMembers
        case "NONE": quantifier = .noMember
        default: break
        }
        if quantifier != nil { position += 1 }
        let lhs = try parseOperand()
        let (op, operatorColumn) = try parseOperator(after: lhs)
        let rhs = try parseOperand()
        try rejectArithmetic()
        return PredicateComparison(
            quantifier: quantifier, quantifierColumn: quantifierColumn, lhs: lhs, op: op,
            operatorColumn: operatorColumn, rhs: rhs)
    }

    private func rejectArithmetic() throws(PredicateFormatError) {
        if case .symbol(let symbol) = current.kind, ["+", "-", "*", "/", "**"].contains(symbol) {
            throw unsupported(
                "arithmetic ('\(symbol)') is not supported: CloudKit compares fields with constant values",
                at: current.column, suggestion: "compute the value in Swift and pass it as an argument (%@)")
        }
    }

    private mutating func parseOperator(
        after lhs: PredicateOperand
    ) throws(PredicateFormatError) -> (PredicateComparison.Operator, Int) {
        try rejectArithmetic()
        let token = advance()
        let op: PredicateComparison.Operator
        switch (token.kind, token.keyword) {
        case (.symbol("=="), _), (.symbol("="), _): op = .equals
        case (.symbol("!="), _), (.symbol("<>"), _): op = .notEquals
        case (.symbol("<"), _): op = .lessThan
        case (.symbol("<="), _), (.symbol("=<"), _): op = .lessThanOrEquals
        case (.symbol(">"), _): op = .greaterThan
        case (.symbol(">="), _), (.symbol("=>"), _): op = .greaterThanOrEquals
        case (_, "IN"): op = .in
        case (_, "CONTAINS"): op = .contains
        case (_, "BEGINSWITH"): op = .beginsWith
        case (_, "BETWEEN"): op = .between
        case (_, "TOKENMATCHES"): op = .tokenMatches
        case (_, "ENDSWITH"):
            throw unsupported(
                "ENDSWITH is not supported by CloudKit", at: token.column,
                suggestion: "use BEGINSWITH, or token search (self CONTAINS %@) for words anywhere in the text")
        case (_, "LIKE"), (_, "MATCHES"):
            throw unsupported(
                "\(token.keyword ?? "") is not supported by CloudKit: it has no wildcard or regular-expression matching",
                at: token.column,
                suggestion: "use BEGINSWITH for prefixes, or token search (self CONTAINS %@) for words")
        case (.end, _):
            throw syntax("expected an operator (==, <, IN, BEGINSWITH, …) after \(describe(lhs))", at: token.column)
        default:
            if token.keyword == "AND" || token.keyword == "OR" || token.isSymbol("&&") || token.isSymbol("||")
                || token.isSymbol(")")
            {
                throw syntax(
                    "\(describe(lhs)) alone is not a condition: compare it with an operator", at: token.column,
                    suggestion: "write a comparison such as read == YES")
            }
            if case .symbol(".") = token.kind, case .key(let key, _) = lhs {
                throw unsupported(
                    "key paths ('\(key).…') are not supported: CloudKit queries only the record's own fields",
                    at: token.column, suggestion: "query the related record type, or copy the value into this record")
            }
            if case .symbol("@") = token.kind {
                throw unsupported(
                    "collection operators (@count, @sum, …) are not supported by CloudKit", at: token.column)
            }
            if case .brackets(let content) = token.kind {
                throw unsupported(
                    "subscripts ('[\(content)]') are not supported by CloudKit", at: token.column,
                    suggestion: "use CONTAINS or ANY to test the members of a list field")
            }
            throw syntax("expected an operator (==, <, IN, BEGINSWITH, …), found \(token.quoted)", at: token.column)
        }
        if case .brackets(let modifiers) = current.kind {
            let letters = Set(modifiers.lowercased())
            // CloudKit's own token search is spelled `allTokens TOKENMATCHES[cdl] %@`: its
            // modifiers say what token search does anyway.
            guard op == .tokenMatches, letters.isSubset(of: ["c", "d", "l"]) else {
                throw unsupported(
                    "comparison modifiers ('[\(modifiers)]': case-, diacritic- or locale-insensitive) are not "
                        + "supported by CloudKit", at: current.column,
                    suggestion: "compare with a normalized copy of the field (say, lowercased when saved), or use "
                        + "token search (self CONTAINS %@), which ignores case and diacritics")
            }
            position += 1
        }
        return (op, token.column)
    }

    private func describe(_ operand: PredicateOperand) -> String {
        switch operand {
        case .key(let key, _): return "the key '\(key)'"
        case .self: return "self"
        case .value: return "a value"
        case .distance: return "a distance"
        }
    }

    // MARK: - Operands

    private mutating func parseOperand() throws(PredicateFormatError) -> PredicateOperand {
        let token = advance()
        let column = token.column
        switch token.kind {
        case .word(let word):
            switch token.keyword {
            case "YES", "TRUE": return .value(.int64(1), column: column)
            case "NO", "FALSE": return .value(.int64(0), column: column)
            case "NULL", "NIL":
                throw unsupported(
                    "nil is not supported: CloudKit never matches a missing field", at: column,
                    suggestion: "store an explicit value (such as 0 or an empty string) and compare with it")
            case "SELF": return .self(column: column)
            case "SUBQUERY":
                throw unsupported("SUBQUERY is not supported by CloudKit", at: column)
            case "FUNCTION", "CAST", "FIRST", "LAST", "SIZE":
                throw unsupported(
                    "\(word.uppercased()) is not supported by CloudKit", at: column,
                    suggestion: "pass computed values as arguments (%@)")
            case let keyword? where Self.reservedWords.contains(keyword):
                throw syntax(
                    "expected a key or a value, found the keyword \(keyword)", at: column,
                    suggestion: "write #\(word) for a field named \(word)")
            default:
                return .key(try validKey(word, at: column), column: column)
            }
        case .escapedWord(let word):
            return .key(try validKey(word, at: column), column: column)
        case .selector(let selector):
            return try parseFunction(selector, at: column)
        case .string(let text):
            return .value(.string(text), column: column)
        case .number(let number):
            return .value(number, column: column)
        case .symbol("-"):
            guard case .number(let number) = current.kind else {
                throw syntax("expected a number after '-'", at: current.column)
            }
            position += 1
            switch number {
            case .int64(let value): return .value(.int64(-value), column: column)
            case .double(let value): return .value(.double(-value), column: column)
            default: return .value(number, column: column)
            }
        case .symbol("{"):
            return .value(try parseListLiteral(openedAt: column), column: column)
        case .specifier(let text, let conversion):
            return try substitute(text, conversion, at: column)
        case .variable(let name):
            throw unsupported(
                "variables ('$\(name)') are not supported by CloudKit queries", at: column,
                suggestion: "pass the value as an argument (%@)")
        case .symbol("@"):
            throw unsupported("collection operators (@count, @sum, …) are not supported by CloudKit", at: column)
        case .end:
            throw syntax("expected a key or a value at the end of the predicate", at: column)
        default:
            throw syntax("expected a key or a value, found \(token.quoted)", at: column)
        }
    }

    /// `{a, b, …}`: a list of values.
    private mutating func parseListLiteral(openedAt column: Int) throws(PredicateFormatError) -> FieldValue {
        var members: [FieldValue] = []
        if current.isSymbol("}") {
            position += 1
            return .list(elementType: .string, members)
        }
        while true {
            let element = try parseOperand()
            guard case .value(let value, _) = element else {
                throw syntax("a list literal holds values, not keys", at: element.column)
            }
            members.append(value)
            if current.isSymbol(",") {
                position += 1
                continue
            }
            try expect("}", "to close the list opened at column \(column)")
            return try PredicateValues.checked(
                .list(elementType: members.first?.type ?? .string, members), column: column, format: format)
        }
    }

    /// `distanceToLocation:fromLocation:(key, location)`, in either argument order.
    private mutating func parseFunction(_ selector: String, at column: Int) throws(PredicateFormatError)
        -> PredicateOperand
    {
        guard selector == "distanceToLocation:fromLocation:" else {
            throw unsupported(
                "the function '\(selector)' is not supported by CloudKit", at: column,
                suggestion: "the only function CloudKit supports is distanceToLocation:fromLocation:(key, %@)")
        }
        try expect("(", "after \(selector)")
        let first = try parseOperand()
        try expect(",", "between the arguments of \(selector)")
        let second = try parseOperand()
        try expect(")", "to close the arguments of \(selector)")
        switch (first, second) {
        case (.key(let key, _), .value(let value, let valueColumn)),
            (.value(let value, let valueColumn), .key(let key, _)):
            guard case .location(let location) = value else {
                throw PredicateFormatError(
                    .typeMismatch, column: valueColumn,
                    reason: "distanceToLocation:fromLocation: measures from a Location, not a \(value.type.rawValue)",
                    suggestion: "pass a Location as the argument (%@)", format: format)
            }
            return .distance(key: key, location: location, column: column)
        default:
            throw syntax(
                "distanceToLocation:fromLocation: takes a location field and a Location value", at: first.column,
                suggestion: "write distanceToLocation:fromLocation:(location, %@) < %f")
        }
    }

    // MARK: - Keys and arguments

    /// The system fields' `___` names are keys too; other keys start with a letter.
    private func validKey(_ key: String, at column: Int) throws(PredicateFormatError) -> String {
        let isPlain =
            key.first.map { $0.isASCII && $0.isLetter } == true
            && key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
        guard isPlain || PredicateCompiler.systemFieldsByKey[key] != nil else {
            if key.contains(".") {
                throw unsupported(
                    "key paths ('\(key)') are not supported: CloudKit queries only the record's own fields",
                    at: column, suggestion: "query the related record type, or copy the value into this record")
            }
            throw PredicateFormatError(
                .invalidKey, column: column,
                reason: "'\(key)' is not a field name: CloudKit keys start with a letter and hold only letters, "
                    + "digits and underscores", format: format)
        }
        return key
    }

    private mutating func substitute(
        _ text: String, _ conversion: Character, at column: Int
    ) throws(PredicateFormatError) -> PredicateOperand {
        guard nextArgument < arguments.count else {
            throw PredicateFormatError(
                .argumentCount, column: column,
                reason: "\(text) has no argument: \(arguments.count) given, this is specifier \(nextArgument + 1)",
                format: format)
        }
        let argument = arguments[nextArgument]
        nextArgument += 1
        func mismatch(_ expected: String) -> PredicateFormatError {
            PredicateFormatError(
                .typeMismatch, column: column,
                reason: "\(text) needs \(expected); argument \(nextArgument) is a \(argument.type.rawValue)",
                format: format)
        }
        switch conversion {
        case "K":
            guard case .string(let key) = argument else { throw mismatch("a key name (a String)") }
            return .key(try validKey(key, at: column), column: column)
        case "@":
            return .value(try PredicateValues.checked(argument, column: column, format: format), column: column)
        case "d", "i", "u":
            guard case .int64 = argument else { throw mismatch("an integer") }
            return .value(argument, column: column)
        default:
            switch argument {
            case .double:
                return .value(try PredicateValues.checked(argument, column: column, format: format), column: column)
            case .int64(let value): return .value(.double(Double(value)), column: column)
            default: throw mismatch("a number")
            }
        }
    }
}
