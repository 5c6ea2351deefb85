import Foundation

/// The one predicate evaluator of Nimbus: whether a record matches a filter or a query.
///
/// Rules, as CloudKit applies them:
/// - A filter on a field the record does not have never matches, whatever the comparator
///   (`NOT_EQUALS`, `NOT_IN` and the other negations included), as SQL treats NULL.
/// - Values compare within their kind: numbers (INT64, DOUBLE) with numbers, TIMESTAMP with
///   TIMESTAMP (to the fraction of a millisecond) or numbers (of milliseconds), strings with
///   strings (case-sensitively, by Unicode scalars), references by record name. Values of
///   different kinds never match.
/// - Token comparators split text on anything that is not a letter or a digit and compare
///   tokens case- and diacritic-insensitively.
/// - NEAR measures great-circle distance in meters.
/// - IN and NOT_IN on a list field ask whether some member (no member) is one of the values,
///   as CloudKit's `ANY tags IN %@` does.
/// - A token search without a field (``QueryFilter/Target/searchableFields``) looks at every
///   STRING and STRING_LIST field of the record.
extension RecordQuery {
    /// Whether `record` is of the query's type and matches every filter.
    public func matches(_ record: Record) -> Bool {
        guard !record.deleted, record.recordType == recordType else { return false }
        return filters.allSatisfy { $0.matches(record) }
    }
}

extension QueryFilter {
    /// Whether `record` satisfies this filter.
    public func matches(_ record: Record) -> Bool {
        guard let field = Self.resolve(target, in: record) else { return false }
        return Self.evaluate(comparator, field: field, value: value, distance: distance)
    }

    /// The value a target names in a record, or `nil` when the record has none.
    public static func resolve(_ target: Target, in record: Record) -> FieldValue? {
        switch target {
        case .field(let name):
            return record.fields[name]
        case .system(.recordName):
            return .string(record.recordName)
        case .system(.createdTimestamp):
            return record.created.map { .timestamp($0.timestamp) }
        case .system(.modifiedTimestamp):
            return record.modified.map { .timestamp($0.timestamp) }
        case .system(.createdUserRecordName):
            return record.created?.userRecordName.map(FieldValue.string)
        case .system(.modifiedUserRecordName):
            return record.modified?.userRecordName.map(FieldValue.string)
        case .searchableFields:
            let text = record.fields.keys.sorted().flatMap { key -> [FieldValue] in
                switch record.fields[key] {
                case .string(let value)?: return [.string(value)]
                case .list(.string, let members)?: return members
                default: return []
                }
            }
            return text.isEmpty ? nil : .list(elementType: .string, text)
        }
    }

    /// Applies a comparator to a field value.
    public static func evaluate(_ comparator: Comparator, field: FieldValue, value: FieldValue, distance: Double?)
        -> Bool
    {
        switch comparator {
        case .equals:
            return equal(field, value)
        case .notEquals:
            return comparable(field, value) && !equal(field, value)
        case .lessThan:
            return order(field, value) == .orderedAscending
        case .lessThanOrEquals:
            return order(field, value).map { $0 != .orderedDescending } ?? false
        case .greaterThan:
            return order(field, value) == .orderedDescending
        case .greaterThanOrEquals:
            return order(field, value).map { $0 != .orderedAscending } ?? false
        case .near:
            guard case .location(let here) = field, case .location(let center) = value, let distance else {
                return false
            }
            return here.distance(to: center) <= distance
        case .containsAllTokens, .containsAnyTokens:
            guard case .string(let query) = value else { return false }
            let wanted = tokens(of: query)
            guard !wanted.isEmpty else { return false }
            let present: Set<String>
            switch field {
            case .string(let text): present = tokens(of: text)
            case .list(_, let members): present = Set(members.compactMap(\.stringValue).flatMap(tokens(of:)))
            default: return false
            }
            return comparator == .containsAllTokens ? wanted.isSubset(of: present) : !wanted.isDisjoint(with: present)
        case .in:
            let candidates = elements(of: value)
            if case .list(_, let members) = field {
                return members.contains { member in candidates.contains { equal(member, $0) } }
            }
            return candidates.contains { equal(field, $0) }
        case .notIn:
            let candidates = elements(of: value)
            if case .list(_, let members) = field {
                return !members.contains { member in candidates.contains { equal(member, $0) } }
            }
            return candidates.contains { comparable(field, $0) } && !candidates.contains { equal(field, $0) }
        case .listContains:
            guard case .list(_, let members) = field else { return false }
            return members.contains { equal($0, value) }
        case .notListContains:
            guard case .list(_, let members) = field else { return false }
            return !members.contains { equal($0, value) }
        case .notListContainsAny:
            guard case .list(_, let members) = field else { return false }
            return !elements(of: value).contains { wanted in members.contains { equal($0, wanted) } }
        case .listContainsAll:
            guard case .list(_, let members) = field else { return false }
            return elements(of: value).allSatisfy { wanted in members.contains { equal($0, wanted) } }
        case .notListContainsAll:
            guard case .list(_, let members) = field else { return false }
            return !elements(of: value).allSatisfy { wanted in members.contains { equal($0, wanted) } }
        case .beginsWith:
            guard case .string(let text) = field, case .string(let prefix) = value else { return false }
            return text.unicodeScalars.starts(with: prefix.unicodeScalars)
        case .notBeginsWith:
            guard case .string(let text) = field, case .string(let prefix) = value else { return false }
            return !text.unicodeScalars.starts(with: prefix.unicodeScalars)
        case .listMemberBeginsWith, .notListMemberBeginsWith:
            guard case .list(_, let members) = field, case .string(let prefix) = value else { return false }
            let any = members.contains { member in
                member.stringValue.map { $0.unicodeScalars.starts(with: prefix.unicodeScalars) } ?? false
            }
            return comparator == .listMemberBeginsWith ? any : !any
        }
    }

    // MARK: - Comparison

    /// Equality within a kind; lists are equal element by element.
    public static func equal(_ lhs: FieldValue, _ rhs: FieldValue) -> Bool {
        switch (lhs, rhs) {
        case (.list(_, let left), .list(_, let right)):
            return left.count == right.count && zip(left, right).allSatisfy { equal($0, $1) }
        case (.bytes(let left), .bytes(let right)):
            return left == right
        case (.location(let left), .location(let right)):
            return left.latitude == right.latitude && left.longitude == right.longitude
        case (.reference(let left), .reference(let right)):
            return left.recordName == right.recordName
        default:
            return order(lhs, rhs) == .orderedSame
        }
    }

    /// Whether two values are of kinds that compare at all.
    public static func comparable(_ lhs: FieldValue, _ rhs: FieldValue) -> Bool {
        switch (lhs, rhs) {
        case (.list, .list), (.bytes, .bytes), (.location, .location), (.reference, .reference): return true
        default: return order(lhs, rhs) != nil
        }
    }

    /// The order of two scalar values of comparable kinds, or `nil`.
    public static func order(_ lhs: FieldValue, _ rhs: FieldValue) -> ComparisonResult? {
        switch (lhs, rhs) {
        case (.string(let left), .string(let right)):
            if left == right { return .orderedSame }
            return left.unicodeScalars.lexicographicallyPrecedes(right.unicodeScalars) ? .orderedAscending : .orderedDescending
        case (.int64(let left), .int64(let right)):
            return left == right ? .orderedSame : (left < right ? .orderedAscending : .orderedDescending)
        case (.timestamp(let left, let leftFraction), .timestamp(let right, let rightFraction)):
            // Whole milliseconds first, then the fraction of a millisecond (both in their
            // one form: the nearest millisecond and a fraction within half of one).
            let a = (left, leftFraction), b = (right, rightFraction)
            return a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
        case (.timestamp, .int64(let number)):
            return order(lhs, .timestamp(number))
        case (.int64(let number), .timestamp):
            return order(.timestamp(number), rhs)
        case (.reference(let left), .reference(let right)):
            return order(.string(left.recordName), .string(right.recordName))
        default:
            guard let left = number(lhs), let right = number(rhs) else { return nil }
            return left == right ? .orderedSame : (left < right ? .orderedAscending : .orderedDescending)
        }
    }

    private static func number(_ value: FieldValue) -> Double? {
        switch value {
        case .int64(let number): return Double(number)
        case .timestamp(let number, let fraction): return Double(number) + Double(fraction) * 0x1p-54
        case .double(let number): return number
        default: return nil
        }
    }

    /// The members of a list value; a scalar is a list of itself.
    public static func elements(of value: FieldValue) -> [FieldValue] {
        if case .list(_, let members) = value { return members }
        return [value]
    }

    /// Lowercased, diacritic-free tokens of a text.
    public static func tokens(of text: String) -> Set<String> {
        let folded = text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        return Set(folded.split { !($0.isLetter || $0.isNumber) }.map(String.init))
    }
}
