/// Why a predicate format string could not be compiled to a query's filters: where (the
/// ``column``), what (``code`` and ``reason``) and what CloudKit supports instead
/// (``suggestion``).
///
/// ```swift
/// do {
///     let query = try Query(recordType: "Article", predicate: "order > 5 OR read == NO")
/// } catch {
///     print(error)
/// }
/// // column 11: OR is not supported: CloudKit combines conditions with AND only
/// // Instead: run one query per alternative and merge the results, or, for alternatives on one field, use IN with a list (name IN %@)
/// //   order > 5 OR read == NO
/// //             ^
/// ```
public struct PredicateFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem. Match on it; new codes may be added.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The format string is not a predicate: an unexpected or missing token, an
        /// unterminated string.
        public static let syntax = Code("syntax")
        /// Valid `NSPredicate` syntax that CloudKit queries do not support (OR, ENDSWITH,
        /// `[cd]`, NOT on a comparison CloudKit cannot negate, key paths, …).
        public static let unsupported = Code("unsupported")
        /// A key that is not a field name (CloudKit keys start with a letter and hold letters,
        /// digits and underscores).
        public static let invalidKey = Code("invalidKey")
        /// A value of the wrong kind for its operator (BEGINSWITH with a number, IN with a
        /// single value, a `%d` argument that is not an integer, an argument type CloudKit
        /// does not accept).
        public static let typeMismatch = Code("typeMismatch")
        /// Fewer or more arguments than the format's `%` specifiers.
        public static let argumentCount = Code("argumentCount")

        public var description: String { name }
    }

    /// The kind of problem.
    public var code: Code
    /// The 1-based column (in characters) of the format string where the problem is; one past
    /// the end for problems found at the end (a missing operand, unused arguments).
    public var column: Int
    /// What is wrong.
    public var reason: String
    /// What CloudKit supports instead, when there is an alternative.
    public var suggestion: String?
    /// The format string.
    public var format: String

    public init(_ code: Code, column: Int, reason: String, suggestion: String? = nil, format: String) {
        self.code = code
        self.column = column
        self.reason = reason
        self.suggestion = suggestion
        self.format = format
    }

    /// The reason, the suggestion and the format string with a caret under the column.
    public var description: String {
        var text = "column \(column): \(reason)"
        if let suggestion { text += "\nInstead: \(suggestion)" }
        let caret = String(repeating: " ", count: max(0, column - 1)) + "^"
        return text + "\n  \(format)\n  \(caret)"
    }
}
