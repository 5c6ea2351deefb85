import NimbusProtocol

extension RecordQuery {
    /// A query condition written as an `NSPredicate` format string, compiled to the query's
    /// ``QueryFilter``s. `NSPredicate(format:)` does not exist on Linux; this reads the
    /// subset of its syntax that CloudKit queries support, with the same arguments.
    ///
    /// ```swift
    /// let unread = try Query.Predicate("order > %d AND read == NO", lastSeenOrder)
    /// let query = Query(recordType: "Article", predicate: unread, sortDescriptors: [.ascending("order")])
    /// // Or in one step:
    /// let swift = try Query(recordType: "Article", predicate: "ANY tags IN %@", ["swift", "server"])
    /// ```
    ///
    /// What compiles to what:
    ///
    /// | Predicate | Filter |
    /// |---|---|
    /// | `title == %@`, `!=`, `<`, `<=`, `>`, `>=` (also `=`, `<>`, `=<`, `=>`) | `EQUALS`, `NOT_EQUALS`, `LESS_THAN`, … |
    /// | `order BETWEEN {%d, %d}` (or a two-element array) | `GREATER_THAN_OR_EQUALS` and `LESS_THAN_OR_EQUALS` |
    /// | `name IN %@` (an array or `{a, b}`), `NOT (name IN %@)` | `IN`, `NOT_IN` |
    /// | `title BEGINSWITH %@`, `NOT (title BEGINSWITH %@)` | `BEGINS_WITH`, `NOT_BEGINS_WITH` |
    /// | `tags CONTAINS %@`, `%@ IN tags`, `ANY tags == %@` | `LIST_CONTAINS` (`NOT …`: `NOT_LIST_CONTAINS`) |
    /// | `tags CONTAINS %@` with an array | `LIST_CONTAINS_ALL` (`NOT …`: `NOT_LIST_CONTAINS_ALL`) |
    /// | `ANY tags IN %@`, `NONE tags IN %@` | `IN` on the list field, `NOT_LIST_CONTAINS_ANY` |
    /// | `ANY tags BEGINSWITH %@`, `NONE tags BEGINSWITH %@` | `LIST_MEMBER_BEGINS_WITH`, `NOT_LIST_MEMBER_BEGINS_WITH` |
    /// | `distanceToLocation:fromLocation:(location, %@) < %f` | `NEAR`, with `distance` in **meters** |
    /// | `self CONTAINS %@` (also `allTokens TOKENMATCHES[cdl] %@`) | `CONTAINS_ALL_TOKENS` on every string field |
    /// | `TRUEPREDICATE` | no filter: every record of the type |
    ///
    /// Conditions combine with `AND` (or `&&`); `NOT` (or `!`) negates the forms above that
    /// have a negated comparator, and `NONE` is `NOT ANY`. Values are quoted strings (`'a'` or
    /// `"a"`), numbers, `YES`/`NO`/`TRUE`/`FALSE` (stored as 1 and 0, as CloudKit stores
    /// booleans), list literals `{a, b}`, and arguments: `%@` for any ``PredicateArgument``
    /// (strings, numbers, dates, data, locations, references, records, record IDs, arrays),
    /// `%d` for integers, `%f` for numbers and `%K` for a key name.
    ///
    /// Keys are field names, or the system fields `recordID`, `creationDate`,
    /// `modificationDate`, `creatorUserRecordID` and `lastModifiedUserRecordID` (also their
    /// schema names `___recordID`, `___createTime`, …). A reference, record or record ID
    /// compared with `recordID` or a user field stands for its record name.
    ///
    /// Distances are in meters, like CoreLocation's distances (which `distanceToLocation:fromLocation:`
    /// returns in `NSPredicate`) and like the `distance` of CloudKit Web Services' NEAR filter
    /// that the predicate compiles to. Apple's own samples are not consistent here (one names
    /// its radius in kilometers); Nimbus takes meters throughout.
    ///
    /// Everything else fails with a ``PredicateFormatError`` naming the column and what CloudKit
    /// offers instead: `OR` and `||` (CloudKit has none: run one query per alternative, or use
    /// `IN`), `NOT` of `<`, `BETWEEN`, a distance, a token search or an `AND`, `ALL`,
    /// `ENDSWITH`, `LIKE`, `MATCHES`, modifiers such as `[cd]`, key paths, `@count`,
    /// `SUBQUERY`, `$variables`, `nil`, arithmetic, comparisons between two fields, and
    /// `FALSEPREDICATE`. `CONTAINS` on a field tests list membership, as in CloudKit; search
    /// text with `BEGINSWITH` or with token search (`self CONTAINS`).
    public struct Predicate: Sendable, Hashable, CustomStringConvertible {
        /// The format string.
        public let format: String
        /// The filters the predicate compiles to; all must match.
        public let filters: [QueryFilter]

        /// Compiles a format string, substituting `arguments` for its `%` specifiers in order.
        /// - Throws: ``PredicateFormatError`` for a syntax error, a form CloudKit does not support, or
        ///   arguments that don't fit the specifiers.
        public init(_ format: String, _ arguments: any PredicateArgument...) throws(PredicateFormatError) {
            try self.init(format: format, argumentArray: arguments)
        }

        /// Compiles a format string with an array of arguments.
        public init(format: String, argumentArray arguments: [any PredicateArgument]) throws(PredicateFormatError) {
            var parser = try PredicateParser(format: format, arguments: arguments.map(\.predicateValue))
            let node = try parser.parse()
            self.format = format
            self.filters = try PredicateCompiler(format: format).compile(node)
        }

        /// Every record of the query's type (`TRUEPREDICATE`).
        public static let all = Predicate(uncheckedFormat: "TRUEPREDICATE", filters: [])

        private init(uncheckedFormat format: String, filters: [QueryFilter]) {
            self.format = format
            self.filters = filters
        }

        public var description: String { format }
    }

    /// A query for the records of a type that match a predicate.
    public init(recordType: String, predicate: Predicate, sortDescriptors: [QuerySort] = []) {
        self.init(recordType: recordType, filters: predicate.filters, sorts: sortDescriptors)
    }

    /// A query for the records of a type that match a predicate format string.
    ///
    /// ```swift
    /// let query = try Query(recordType: "Article", predicate: "order > %d AND read == NO", lastOrder,
    ///                       sortDescriptors: [.ascending("order")])
    /// ```
    /// - Throws: ``PredicateFormatError`` (see ``Predicate`` for what is supported).
    public init(
        recordType: String, predicate format: String, _ arguments: any PredicateArgument...,
        sortDescriptors: [QuerySort] = []
    ) throws(PredicateFormatError) {
        let predicate = try Predicate(format: format, argumentArray: arguments)
        self.init(recordType: recordType, predicate: predicate, sortDescriptors: sortDescriptors)
    }
}
