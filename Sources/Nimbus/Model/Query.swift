import NimbusProtocol

/// A query: a record type, filters (all must hold) and sort order. Run it with
/// ``Database/records(matching:inZoneWith:desiredKeys:resultsLimit:)`` or a ``QueryOperation``.
///
/// ```swift
/// let recent = Query(recordType: "Bookmark", filters: [
///     .greaterThan("addedAt", Date().addingTimeInterval(-86_400)),
///     .listContains("tags", "swift"),
/// ], sortDescriptors: [.descending("addedAt")])
/// ```
public struct Query: Sendable, Hashable {
    public var recordType: String
    public var filters: [Filter]
    public var sortDescriptors: [SortDescriptor]

    public init(recordType: String, filters: [Filter] = [], sortDescriptors: [SortDescriptor] = []) {
        self.recordType = recordType
        self.filters = filters
        self.sortDescriptors = sortDescriptors
    }

    /// One condition of a query (a `filterBy` entry).
    public struct Filter: Sendable, Hashable {
        /// The 20 comparators of CloudKit Web Services.
        public enum Comparator: String, Sendable, Hashable, CaseIterable {
            case equals = "EQUALS"
            case notEquals = "NOT_EQUALS"
            case lessThan = "LESS_THAN"
            case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
            case greaterThan = "GREATER_THAN"
            case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
            case near = "NEAR"
            case containsAllTokens = "CONTAINS_ALL_TOKENS"
            case `in` = "IN"
            case notIn = "NOT_IN"
            case containsAnyTokens = "CONTAINS_ANY_TOKENS"
            case listContains = "LIST_CONTAINS"
            case notListContains = "NOT_LIST_CONTAINS"
            case notListContainsAny = "NOT_LIST_CONTAINS_ANY"
            case beginsWith = "BEGINS_WITH"
            case notBeginsWith = "NOT_BEGINS_WITH"
            case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
            case notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"
            case listContainsAll = "LIST_CONTAINS_ALL"
            case notListContainsAll = "NOT_LIST_CONTAINS_ALL"
        }

        /// What a filter compares: a record field, or a system field the server maintains
        /// (`createdTimestamp`, `modifiedTimestamp`, `createdUserRecordName`, …).
        public enum Field: Sendable, Hashable {
            case field(String)
            case system(String)
        }

        public var field: Field
        public var comparator: Comparator
        public var value: FieldValue
        /// For ``Comparator/near``: the radius in meters.
        public var distance: Double?

        public init(_ field: Field, _ comparator: Comparator, _ value: FieldValue, distance: Double? = nil) {
            self.field = field
            self.comparator = comparator
            self.value = value
            self.distance = distance
        }

        public static func equals(_ key: String, _ value: some RecordValue) -> Filter {
            Filter(.field(key), .equals, value.fieldValue)
        }
        public static func notEquals(_ key: String, _ value: some RecordValue) -> Filter {
            Filter(.field(key), .notEquals, value.fieldValue)
        }
        public static func lessThan(_ key: String, _ value: some RecordValue) -> Filter {
            Filter(.field(key), .lessThan, value.fieldValue)
        }
        public static func greaterThan(_ key: String, _ value: some RecordValue) -> Filter {
            Filter(.field(key), .greaterThan, value.fieldValue)
        }
        public static func beginsWith(_ key: String, _ prefix: String) -> Filter {
            Filter(.field(key), .beginsWith, .string(prefix))
        }
        /// The list field contains `element`.
        public static func listContains(_ key: String, _ element: some RecordValue) -> Filter {
            Filter(.field(key), .listContains, element.fieldValue)
        }
        /// The field's value is one of `values`.
        public static func `in`<Element: RecordListElement>(_ key: String, _ values: [Element]) -> Filter {
            Filter(.field(key), .in, values.fieldValue)
        }
        /// The location field lies within `meters` of `location`.
        public static func near(_ key: String, _ location: Location, meters: Double) -> Filter {
            Filter(.field(key), .near, .location(location), distance: meters)
        }

        var wireJSON: JSON {
            var members: [String: JSON] = [
                "comparator": .string(comparator.rawValue), "fieldValue": value.wireJSON(),
            ]
            switch field {
            case .field(let name): members["fieldName"] = .string(name)
            case .system(let name): members["systemFieldName"] = .string(name)
            }
            if let distance { members["distance"] = .double(distance) }
            return .object(members)
        }
    }

    /// One sort key of a query (a `sortBy` entry).
    public struct SortDescriptor: Sendable, Hashable {
        public var fieldName: String
        public var ascending: Bool
        /// For location fields: sort by distance from this location.
        public var relativeLocation: Location?

        public init(fieldName: String, ascending: Bool = true, relativeLocation: Location? = nil) {
            self.fieldName = fieldName
            self.ascending = ascending
            self.relativeLocation = relativeLocation
        }

        public static func ascending(_ fieldName: String) -> SortDescriptor { SortDescriptor(fieldName: fieldName) }
        public static func descending(_ fieldName: String) -> SortDescriptor {
            SortDescriptor(fieldName: fieldName, ascending: false)
        }

        var wireJSON: JSON {
            var members: [String: JSON] = ["fieldName": .string(fieldName), "ascending": .bool(ascending)]
            if let relativeLocation {
                members["relativeLocation"] = FieldValue.location(relativeLocation).wireValue()
            }
            return .object(members)
        }
    }

    /// The `query` dictionary of `records/query` and query subscriptions.
    var wireJSON: JSON {
        var members: [String: JSON] = ["recordType": .string(recordType)]
        if !filters.isEmpty { members["filterBy"] = .array(filters.map(\.wireJSON)) }
        if !sortDescriptors.isEmpty { members["sortBy"] = .array(sortDescriptors.map(\.wireJSON)) }
        return .object(members)
    }

    /// Decodes a `query` dictionary (as subscriptions come back from the server).
    init(wire reader: WireReader) throws(CloudKitError) {
        self.init(recordType: try reader.required("recordType").string())
        for filterReader in try reader.optional("filterBy")?.array() ?? [] {
            let comparatorName = try filterReader.required("comparator").string()
            guard let comparator = Filter.Comparator(rawValue: comparatorName) else {
                throw .badRequest("'\(filterReader.path).comparator': unknown comparator \(comparatorName)")
            }
            let field: Filter.Field =
                if let name = try filterReader.optionalString("fieldName") {
                    .field(name)
                } else {
                    .system(try filterReader.required("systemFieldName").string())
                }
            let value = try FieldValue(wire: filterReader.required("fieldValue"))
            let distance = try filterReader.optional("distance")?.double()
            filters.append(Filter(field, comparator, value, distance: distance))
        }
        for sortReader in try reader.optional("sortBy")?.array() ?? [] {
            var sort = SortDescriptor(
                fieldName: try sortReader.required("fieldName").string(),
                ascending: try sortReader.optionalBool("ascending") ?? true)
            if let location = try sortReader.optional("relativeLocation") {
                sort.relativeLocation = try FieldValue(wire: WireReader(.object(["value": location.json, "type": "LOCATION"]))).locationValue
            }
            sortDescriptors.append(sort)
        }
    }
}

/// Where a query left off when it returned fewer results than matched; pass it to
/// ``Database/records(continuingMatchFrom:desiredKeys:resultsLimit:)``.
public struct QueryCursor: Sendable, Hashable {
    let query: Query
    let zoneID: ZoneID?
    let continuationMarker: String
}
