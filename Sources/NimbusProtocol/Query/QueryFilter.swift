/// One condition of a query's `filterBy`: a comparator applied to a record field (or a
/// system field) and a value, as CloudKit Web Services spells it:
/// `{comparator, fieldName | systemFieldName, fieldValue: {value, type?}, distance?}`.
///
/// Query subscriptions and `records/query` share this model and its evaluator
/// (``QueryFilter/matches(_:)``), so a subscription fires on exactly the records a query
/// with the same filters returns.
public struct QueryFilter: Sendable, Hashable {
    /// The 20 comparators of CloudKit Web Services.
    public enum Comparator: String, Sendable, Hashable, CaseIterable {
        case equals = "EQUALS"
        case notEquals = "NOT_EQUALS"
        case lessThan = "LESS_THAN"
        case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
        case greaterThan = "GREATER_THAN"
        case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
        /// A LOCATION field within `distance` meters of the value.
        case near = "NEAR"
        case containsAllTokens = "CONTAINS_ALL_TOKENS"
        case containsAnyTokens = "CONTAINS_ANY_TOKENS"
        /// The field's value is one of the list's values; for a list field, some member is.
        case `in` = "IN"
        /// The field's value is none of the list's values; for a list field, no member is.
        case notIn = "NOT_IN"
        /// A list field contains the value.
        case listContains = "LIST_CONTAINS"
        case notListContains = "NOT_LIST_CONTAINS"
        /// A list field contains none of the list's values.
        case notListContainsAny = "NOT_LIST_CONTAINS_ANY"
        /// A list field contains every one of the list's values.
        case listContainsAll = "LIST_CONTAINS_ALL"
        case notListContainsAll = "NOT_LIST_CONTAINS_ALL"
        case beginsWith = "BEGINS_WITH"
        case notBeginsWith = "NOT_BEGINS_WITH"
        /// Some member of a STRING_LIST field begins with the value.
        case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
        case notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"

        /// Comparators whose `fieldValue` is a list (`IN [a, b]`, `LIST_CONTAINS_ALL [a, b]`).
        public var takesList: Bool {
            switch self {
            case .in, .notIn, .notListContainsAny, .listContainsAll, .notListContainsAll: return true
            default: return false
            }
        }

        /// Token comparators, the only ones that may target ``Target/searchableFields``.
        public var isTokenSearch: Bool { self == .containsAllTokens || self == .containsAnyTokens }
    }

    /// The fields every record has, addressed with `systemFieldName`.
    public enum SystemField: String, Sendable, Hashable, CaseIterable {
        case recordName
        case createdTimestamp
        case modifiedTimestamp
        case createdUserRecordName
        case modifiedUserRecordName

        /// Also accepted: the schema names CloudKit Dashboard shows (`___recordID`, …).
        public init?(wireName: String) {
            if let field = SystemField(rawValue: wireName) {
                self = field
                return
            }
            switch wireName {
            case "___recordID", "recordID": self = .recordName
            case "___createTime", "createdTime": self = .createdTimestamp
            case "___modTime", "modifiedTime": self = .modifiedTimestamp
            case "___createdBy", "createdBy", "creatorUserRecordName": self = .createdUserRecordName
            case "___modifiedBy", "modifiedBy", "lastModifiedUserRecordName": self = .modifiedUserRecordName
            default: return nil
            }
        }
    }

    /// What the filter looks at.
    public enum Target: Sendable, Hashable {
        case field(String)
        case system(SystemField)
        /// Every string field of the record (`STRING` and `STRING_LIST`): the target of a token
        /// search that names no field, CloudKit's `self CONTAINS 'blue'`. On the wire, a
        /// `CONTAINS_ALL_TOKENS` or `CONTAINS_ANY_TOKENS` filter without `fieldName`.
        case searchableFields
    }

    public var target: Target
    public var comparator: Comparator
    public var value: FieldValue
    /// For NEAR: the radius in meters.
    public var distance: Double?

    public init(_ target: Target, _ comparator: Comparator, _ value: FieldValue, distance: Double? = nil) {
        self.target = target
        self.comparator = comparator
        self.value = value
        self.distance = distance
    }

    /// A filter on a record field.
    public init(field: String, _ comparator: Comparator, _ value: FieldValue, distance: Double? = nil) {
        self.init(.field(field), comparator, value, distance: distance)
    }
}

/// A query as `records/query` and query subscriptions carry it: a record type, filters that
/// must all hold, and the sort order (which subscriptions ignore).
public struct RecordQuery: Sendable, Hashable {
    public var recordType: String
    /// Every filter must match (CloudKit combines `filterBy` entries with AND).
    public var filters: [QueryFilter]
    public var sorts: [QuerySort]

    public init(recordType: String, filters: [QueryFilter] = [], sorts: [QuerySort] = []) {
        self.recordType = recordType
        self.filters = filters
        self.sorts = sorts
    }
}

/// One `sortBy` entry: a field (or system field), the direction, and for LOCATION fields
/// the point distances are measured from.
public struct QuerySort: Sendable, Hashable {
    public var target: QueryFilter.Target
    public var ascending: Bool
    public var relativeLocation: Location?

    public init(_ target: QueryFilter.Target, ascending: Bool = true, relativeLocation: Location? = nil) {
        self.target = target
        self.ascending = ascending
        self.relativeLocation = relativeLocation
    }
}
