import NimbusProtocol

/// Turns a ``PredicateNode`` into CloudKit filters, rejecting what CloudKit does not support.
///
/// | predicate | filter |
/// |---|---|
/// | `k == v`, `k != v`, `k < v`, `k <= v`, `k > v`, `k >= v` | EQUALS, NOT_EQUALS, LESS_THAN, … |
/// | `k BETWEEN {a, b}` | GREATER_THAN_OR_EQUALS a, LESS_THAN_OR_EQUALS b |
/// | `k IN list`, `NOT (k IN list)` | IN, NOT_IN |
/// | `k BEGINSWITH s`, `NOT (k BEGINSWITH s)` | BEGINS_WITH, NOT_BEGINS_WITH |
/// | `k CONTAINS v`, `v IN k`, `ANY k == v` (and NOT) | LIST_CONTAINS (NOT_LIST_CONTAINS) |
/// | `k CONTAINS list` (and NOT) | LIST_CONTAINS_ALL (NOT_LIST_CONTAINS_ALL) |
/// | `ANY k IN list`, `NONE k IN list` | IN, NOT_LIST_CONTAINS_ANY |
/// | `ANY k BEGINSWITH s`, `NONE k BEGINSWITH s` | LIST_MEMBER_BEGINS_WITH, NOT_… |
/// | `distanceToLocation:fromLocation:(k, loc) < d` | NEAR, `distance` d meters |
/// | `self CONTAINS s`, `allTokens TOKENMATCHES[cdl] s` | CONTAINS_ALL_TOKENS on every string field |
/// | `TRUEPREDICATE` | no filter |
struct PredicateCompiler {
    let format: String

    /// The keys that name system fields: `CKRecord`'s property names and the schema's `___` names.
    static let systemFieldsByKey: [String: QueryFilter.SystemField] = [
        "recordID": .recordName, "___recordID": .recordName,
        "creationDate": .createdTimestamp, "___createTime": .createdTimestamp,
        "modificationDate": .modifiedTimestamp, "___modTime": .modifiedTimestamp,
        "creatorUserRecordID": .createdUserRecordName, "___createdBy": .createdUserRecordName,
        "lastModifiedUserRecordID": .modifiedUserRecordName, "___modifiedBy": .modifiedUserRecordName,
    ]

    func compile(_ node: PredicateNode) throws(PredicateFormatError) -> [QueryFilter] {
        switch node {
        case .constant(true, _):
            return []
        case .constant(false, let column):
            throw unsupported(
                "FALSEPREDICATE matches no record, and no CloudKit filter says so", at: column,
                suggestion: "don't run the query")
        case .and(let nodes):
            var filters: [QueryFilter] = []
            for node in nodes { filters += try compile(node) }
            return filters
        case .not(let inner, let column):
            return try compileNegation(of: inner, at: column)
        case .comparison(let comparison):
            return try compile(comparison, negatedAt: nil)
        }
    }

    private func compileNegation(of node: PredicateNode, at column: Int) throws(PredicateFormatError) -> [QueryFilter] {
        switch node {
        case .not(let inner, _):
            return try compile(inner)
        case .constant(false, _):
            return []
        case .constant(true, _):
            throw unsupported(
                "NOT TRUEPREDICATE matches no record, and no CloudKit filter says so", at: column,
                suggestion: "don't run the query")
        case .and:
            throw unsupported(
                "NOT cannot negate an AND: that would need OR, which CloudKit does not have", at: column,
                suggestion: "negate single conditions (NOT (name IN %@)); run one query per alternative for the rest")
        case .comparison(let comparison):
            return try compile(comparison, negatedAt: column)
        }
    }

    // MARK: - Comparisons

    private func compile(
        _ comparison: PredicateComparison, negatedAt notColumn: Int?
    ) throws(PredicateFormatError) -> [QueryFilter] {
        var negated = notColumn != nil
        var comparison = comparison
        if comparison.quantifier == .allMembers {
            throw unsupported(
                "ALL is not supported by CloudKit", at: comparison.quantifierColumn,
                suggestion: "ask whether some member matches (ANY) or none does (NONE); "
                    + "for 'contains every one of', write tags CONTAINS %@ with an array")
        }
        if comparison.quantifier == .noMember {
            negated.toggle()
            comparison.quantifier = .anyMember
        }
        switch (comparison.lhs, comparison.rhs) {
        case (.distance(let key, let location, _), .value(let value, let valueColumn)):
            return [try near(key, location, comparison.op, value, valueColumn, comparison, notColumn)]
        case (.value(let value, let valueColumn), .distance(let key, let location, _)):
            let mirrored = comparison.op.mirrored ?? comparison.op
            return [try near(key, location, mirrored, value, valueColumn, comparison, notColumn)]
        case (.self(let column), .value(let value, let valueColumn)):
            guard comparison.op == .contains, comparison.quantifier == nil else {
                throw unsupported(
                    "self supports only CONTAINS (token search)", at: column,
                    suggestion: "write self CONTAINS %@ to find records whose text fields hold every word of %@")
            }
            return [try tokenSearch(value, valueColumn, notColumn)]
        case (.key(let key, let keyColumn), .value(let value, let valueColumn)):
            if comparison.op == .tokenMatches {
                guard key == "allTokens", comparison.quantifier == nil else {
                    throw unsupported(
                        "TOKENMATCHES works only on allTokens", at: comparison.operatorColumn,
                        suggestion: "write self CONTAINS %@ for token search")
                }
                return [try tokenSearch(value, valueColumn, notColumn)]
            }
            return try keyComparison(
                target(key), keyColumn, comparison.op, comparison.operatorColumn, value, valueColumn,
                any: comparison.quantifier == .anyMember, negated: negated, notColumn: notColumn)
        case (.value(let value, let valueColumn), .key(let key, let keyColumn)):
            if comparison.quantifier != nil {
                throw unsupported(
                    "\(comparison.quantifier!.rawValue) applies to a key on the left", at: comparison.quantifierColumn,
                    suggestion: "write ANY tags == %@")
            }
            if comparison.op == .in {
                // `'swift' IN tags`: the list field contains the value.
                guard !isList(value) else {
                    throw unsupported(
                        "a list IN a list field is not a CloudKit comparison", at: valueColumn,
                        suggestion: "write ANY tags IN %@ (some member is in the list) or tags CONTAINS %@ "
                            + "(every value is a member)")
                }
                return try keyComparison(
                    target(key), keyColumn, .contains, comparison.operatorColumn, value, valueColumn,
                    any: false, negated: negated, notColumn: notColumn)
            }
            guard let mirrored = comparison.op.mirrored else {
                throw unsupported(
                    "\(comparison.op.rawValue) needs the key on its left", at: comparison.operatorColumn,
                    suggestion: "write the field first: \(key) \(comparison.op.rawValue) …")
            }
            return try keyComparison(
                target(key), keyColumn, mirrored, comparison.operatorColumn, value, valueColumn,
                any: false, negated: negated, notColumn: notColumn)
        case (.key, .key), (.key, .self), (.self, .key), (.key, .distance), (.distance, .key):
            throw unsupported(
                "comparing a field with another field is not supported: CloudKit compares fields with values",
                at: comparison.operatorColumn, suggestion: "compare each field with a value (%@)")
        default:
            throw unsupported(
                "this comparison has no field: CloudKit compares a record's field with a value",
                at: comparison.operatorColumn, suggestion: "put a field name on one side (order > %d)")
        }
    }

    /// The comparisons of a field with a value.
    private func keyComparison(
        _ target: QueryFilter.Target, _ keyColumn: Int, _ op: PredicateComparison.Operator, _ operatorColumn: Int,
        _ rawValue: FieldValue, _ valueColumn: Int, any: Bool, negated: Bool, notColumn: Int?
    ) throws(PredicateFormatError) -> [QueryFilter] {
        let value = Self.value(rawValue, for: target)
        func filter(_ comparator: QueryFilter.Comparator) -> [QueryFilter] { [QueryFilter(target, comparator, value)] }
        func pick(_ plain: QueryFilter.Comparator, _ not: QueryFilter.Comparator) -> [QueryFilter] {
            filter(negated ? not : plain)
        }
        if any {
            try requireListField(target, keyColumn, "ANY")
            switch op {
            case .equals:
                try requireScalar(value, valueColumn, "ANY … ==")
                return pick(.listContains, .notListContains)
            case .in:
                try requireList(value, valueColumn, "ANY … IN")
                return pick(.in, .notListContainsAny)
            case .beginsWith:
                try requireString(value, valueColumn, "ANY … BEGINSWITH")
                return pick(.listMemberBeginsWith, .notListMemberBeginsWith)
            default:
                throw unsupported(
                    "ANY works with ==, IN and BEGINSWITH in CloudKit, not \(op.rawValue)", at: operatorColumn,
                    suggestion: "ANY tags == %@, ANY tags IN %@, ANY tags BEGINSWITH %@")
            }
        }
        switch op {
        case .equals:
            return pick(.equals, .notEquals)
        case .notEquals:
            return pick(.notEquals, .equals)
        case .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals:
            if let notColumn {
                let opposite: [PredicateComparison.Operator: String] = [
                    .lessThan: ">=", .lessThanOrEquals: ">", .greaterThan: "<=", .greaterThanOrEquals: "<",
                ]
                throw unsupported(
                    "NOT of \(op.rawValue) is not supported by CloudKit", at: notColumn,
                    suggestion: "write the opposite comparison (\(opposite[op]!)) instead")
            }
            try requireOrderable(value, valueColumn, op.rawValue)
            let comparators: [PredicateComparison.Operator: QueryFilter.Comparator] = [
                .lessThan: .lessThan, .lessThanOrEquals: .lessThanOrEquals, .greaterThan: .greaterThan,
                .greaterThanOrEquals: .greaterThanOrEquals,
            ]
            return filter(comparators[op]!)
        case .between:
            if let notColumn {
                throw unsupported(
                    "NOT of BETWEEN is not supported by CloudKit", at: notColumn,
                    suggestion: "query below the range and above it separately (< and >)")
            }
            guard case .list(_, let bounds) = value, bounds.count == 2 else {
                throw mismatch(
                    "BETWEEN takes a list of two bounds", at: valueColumn,
                    suggestion: "write BETWEEN {%@, %@} or pass a two-element array")
            }
            try requireOrderable(bounds[0], valueColumn, "BETWEEN")
            try requireOrderable(bounds[1], valueColumn, "BETWEEN")
            return [
                QueryFilter(target, .greaterThanOrEquals, bounds[0]), QueryFilter(target, .lessThanOrEquals, bounds[1]),
            ]
        case .in:
            try requireList(value, valueColumn, "IN")
            return pick(.in, .notIn)
        case .contains:
            try requireListField(target, keyColumn, "CONTAINS")
            if isList(value) {
                try requireList(value, valueColumn, "CONTAINS")
                return pick(.listContainsAll, .notListContainsAll)
            }
            return pick(.listContains, .notListContains)
        case .beginsWith:
            try requireString(value, valueColumn, "BEGINSWITH")
            return pick(.beginsWith, .notBeginsWith)
        case .tokenMatches:
            throw unsupported("TOKENMATCHES works only on allTokens", at: operatorColumn)
        }
    }

    /// `distanceToLocation:fromLocation:(key, location) < d`: NEAR, `d` in meters.
    private func near(
        _ key: String, _ location: Location, _ op: PredicateComparison.Operator, _ value: FieldValue,
        _ valueColumn: Int, _ comparison: PredicateComparison, _ notColumn: Int?
    ) throws(PredicateFormatError) -> QueryFilter {
        if let notColumn {
            throw unsupported(
                "NOT of distanceToLocation:fromLocation: is not supported by CloudKit", at: notColumn,
                suggestion: "query within the distance and skip those records in the app")
        }
        if comparison.quantifier != nil {
            throw unsupported("ANY and NONE don't apply to a distance", at: comparison.quantifierColumn)
        }
        guard op == .lessThan || op == .lessThanOrEquals else {
            throw unsupported(
                "a distance compares only with < or <= in CloudKit (records within a radius)",
                at: comparison.operatorColumn, suggestion: "write distanceToLocation:fromLocation:(location, %@) < %f")
        }
        let meters: Double
        switch value {
        case .int64(let number): meters = Double(number)
        case .double(let number): meters = number
        default:
            throw mismatch(
                "a distance compares with a number of meters, not a \(value.type.rawValue)", at: valueColumn)
        }
        guard meters >= 0 else { throw mismatch("a distance can't be negative", at: valueColumn) }
        return QueryFilter(target(key), .near, .location(location), distance: meters)
    }

    /// `self CONTAINS s`: every word of `s`, in any string field.
    private func tokenSearch(_ value: FieldValue, _ valueColumn: Int, _ notColumn: Int?) throws(PredicateFormatError)
        -> QueryFilter
    {
        if let notColumn {
            throw unsupported(
                "NOT of a token search is not supported by CloudKit", at: notColumn,
                suggestion: "search for the words you want, and skip records in the app")
        }
        try requireString(value, valueColumn, "token search")
        return QueryFilter(.searchableFields, .containsAllTokens, value)
    }

    // MARK: - Targets and values

    private func target(_ key: String) -> QueryFilter.Target {
        Self.systemFieldsByKey[key].map(QueryFilter.Target.system) ?? .field(key)
    }

    /// System fields that hold record names compare with strings: a reference (a record, a
    /// record ID) stands for its record name there.
    private static func value(_ value: FieldValue, for target: QueryFilter.Target) -> FieldValue {
        guard case .system(let field) = target, field != .createdTimestamp, field != .modifiedTimestamp else {
            return value
        }
        switch value {
        case .reference(let reference): return .string(reference.recordName)
        case .list(let elementType, let members):
            let converted = members.map { Self.value($0, for: target) }
            return .list(elementType: converted.first?.type ?? elementType, converted)
        default: return value
        }
    }

    private func isList(_ value: FieldValue) -> Bool {
        if case .list = value { return true }
        return false
    }

    // MARK: - Checks

    private func unsupported(_ reason: String, at column: Int, suggestion: String? = nil) -> PredicateFormatError {
        PredicateFormatError(.unsupported, column: column, reason: reason, suggestion: suggestion, format: format)
    }

    private func mismatch(_ reason: String, at column: Int, suggestion: String? = nil) -> PredicateFormatError {
        PredicateFormatError(.typeMismatch, column: column, reason: reason, suggestion: suggestion, format: format)
    }

    private func requireListField(_ target: QueryFilter.Target, _ column: Int, _ what: String)
        throws(PredicateFormatError)
    {
        guard case .field = target else {
            throw unsupported(
                "\(what) tests the members of a list field; system fields are not lists", at: column,
                suggestion: "use == or IN on system fields")
        }
    }

    private func requireList(_ value: FieldValue, _ column: Int, _ what: String) throws(PredicateFormatError) {
        guard case .list(_, let members) = value else {
            throw mismatch(
                "\(what) takes a list, not a single \(value.type.rawValue)", at: column,
                suggestion: "pass an array (%@) or write a list literal {a, b}")
        }
        if members.contains(where: isList) {
            throw mismatch("\(what) takes a list of values, not a list of lists", at: column)
        }
    }

    private func requireScalar(_ value: FieldValue, _ column: Int, _ what: String) throws(PredicateFormatError) {
        if isList(value) {
            throw mismatch(
                "\(what) takes a single value, not a list", at: column, suggestion: "use ANY tags IN %@ for a list")
        }
    }

    private func requireString(_ value: FieldValue, _ column: Int, _ what: String) throws(PredicateFormatError) {
        guard case .string = value else {
            throw mismatch("\(what) takes a string, not a \(value.type.rawValue)", at: column)
        }
    }

    private func requireOrderable(_ value: FieldValue, _ column: Int, _ what: String) throws(PredicateFormatError) {
        switch value {
        case .string, .int64, .double, .timestamp: return
        case .location:
            throw mismatch(
                "\(what) can't order locations", at: column,
                suggestion: "use distanceToLocation:fromLocation:(location, %@) < %f")
        default:
            throw mismatch("\(what) compares numbers, dates and strings, not a \(value.type.rawValue)", at: column)
        }
    }
}
