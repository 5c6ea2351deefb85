import NimbusProtocol

/// A query: a record type, filters (all must hold) and sort order. Run it with
/// ``Database/records(matching:inZoneWith:desiredKeys:resultsLimit:)`` or a ``QueryOperation``,
/// or subscribe to it.
///
/// The shared model's `RecordQuery` (with `QueryFilter` and `QuerySort`), which the server
/// evaluates with the same code for `records/query` and query subscriptions.
///
/// ```swift
/// let recent = Query(recordType: "Bookmark", filters: [
///     .greaterThan("addedAt", Date().addingTimeInterval(-86_400)),
///     .listContains("tags", "swift"),
/// ], sortDescriptors: [.descending("addedAt")])
/// ```
public typealias Query = RecordQuery

extension RecordQuery {
    /// One condition of a query.
    public typealias Filter = QueryFilter
    /// One sort key of a query.
    public typealias SortDescriptor = QuerySort

    /// A query sorted by `sortDescriptors`.
    public init(recordType: String, filters: [QueryFilter] = [], sortDescriptors: [QuerySort]) {
        self.init(recordType: recordType, filters: filters, sorts: sortDescriptors)
    }

    /// The sort keys (CloudKit's name for ``sorts``).
    public var sortDescriptors: [QuerySort] {
        get { sorts }
        set { sorts = newValue }
    }
}

extension QueryFilter {
    public static func equals(_ key: String, _ value: some RecordValue) -> QueryFilter {
        QueryFilter(field: key, .equals, value.fieldValue)
    }
    public static func notEquals(_ key: String, _ value: some RecordValue) -> QueryFilter {
        QueryFilter(field: key, .notEquals, value.fieldValue)
    }
    public static func lessThan(_ key: String, _ value: some RecordValue) -> QueryFilter {
        QueryFilter(field: key, .lessThan, value.fieldValue)
    }
    public static func greaterThan(_ key: String, _ value: some RecordValue) -> QueryFilter {
        QueryFilter(field: key, .greaterThan, value.fieldValue)
    }
    public static func beginsWith(_ key: String, _ prefix: String) -> QueryFilter {
        QueryFilter(field: key, .beginsWith, .string(prefix))
    }
    /// The list field contains `element`.
    public static func listContains(_ key: String, _ element: some RecordValue) -> QueryFilter {
        QueryFilter(field: key, .listContains, element.fieldValue)
    }
    /// The field's value is one of `values`.
    public static func `in`<Element: RecordListElement>(_ key: String, _ values: [Element]) -> QueryFilter {
        QueryFilter(field: key, .in, values.fieldValue)
    }
    /// The location field lies within `meters` of `location`.
    public static func near(_ key: String, _ location: Location, meters: Double) -> QueryFilter {
        QueryFilter(field: key, .near, .location(location), distance: meters)
    }
}

extension QuerySort {
    public static func ascending(_ fieldName: String) -> QuerySort { QuerySort(.field(fieldName)) }
    public static func descending(_ fieldName: String) -> QuerySort { QuerySort(.field(fieldName), ascending: false) }
}

/// Where a query left off when it returned fewer results than matched; pass it to
/// ``Database/records(continuingMatchFrom:desiredKeys:resultsLimit:)``.
public struct QueryCursor: Sendable, Hashable {
    // `package`: NimbusCloudKit archives a cursor in a `CKQueryOperation.Cursor`.
    package let query: Query
    package let zoneID: ZoneID?
    package let continuationMarker: String

    package init(query: Query, zoneID: ZoneID?, continuationMarker: String) {
        self.query = query
        self.zoneID = zoneID
        self.continuationMarker = continuationMarker
    }
}
