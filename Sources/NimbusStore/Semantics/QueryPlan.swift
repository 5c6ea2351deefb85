import NimbusProtocol

/// A `records/query` query checked against its record type's schema: every field exists,
/// every comparator suits its field's type, filter values are coerced to the field types
/// (an INT64 for a TIMESTAMP field, a record name for a REFERENCE), and the indexes the
/// query needs are listed.
///
/// What a query needs, as in CloudKit: a filter needs its field QUERYABLE (SEARCHABLE for the
/// token comparators); a sort needs it SORTABLE; a query with neither needs `recordName`
/// (`___recordID`) QUERYABLE.
public struct QueryPlan: Sendable {
    /// The query as the client sent it (continuation markers are bound to it).
    public let original: RecordQuery
    /// The query with values coerced to the schema's field types: what the evaluator runs.
    public let query: RecordQuery
    /// The indexes the query reads, in the order of its filters and sorts.
    public let requirements: [IndexRequirement]
    /// The schema type of each filtered or sorted field.
    let fieldTypes: [String: FieldType]

    public init(_ query: RecordQuery, schema type: RecordTypeSchema) throws(CloudKitError) {
        var checked = query
        var requirements: [IndexRequirement] = []
        var fieldTypes: [String: FieldType] = [:]
        func require(_ target: QueryFilter.Target, _ kind: IndexKind) {
            let requirement = IndexRequirement(target: target, kind: kind)
            if !requirements.contains(requirement) { requirements.append(requirement) }
        }
        func fieldType(_ target: QueryFilter.Target, _ path: String) throws(CloudKitError) -> FieldType {
            switch target {
            case .searchableFields: return .stringList
            case .system(let field): return field.valueType
            case .field(let name):
                guard let field = type.fields[name] else {
                    throw .badRequest(
                        "\(path): record type '\(query.recordType)' has no field '\(name)' in the schema")
                }
                fieldTypes[name] = field.type
                return field.type
            }
        }
        for (index, filter) in query.filters.enumerated() {
            let path = "'query.filterBy[\(index)]'"
            if filter.target == .searchableFields {
                guard case .string = filter.value else {
                    throw .badRequest("\(path): \(filter.comparator.rawValue) compares with a STRING of tokens")
                }
                require(filter.target, .searchable)
                continue
            }
            let type = try fieldType(filter.target, path)
            checked.filters[index].value = try Self.check(filter, fieldType: type, path: path, recordType: query.recordType)
            require(filter.target, filter.comparator.isTokenSearch ? .searchable : .queryable)
        }
        for (index, sort) in query.sorts.enumerated() {
            let path = "'query.sortBy[\(index)]'"
            let type = try fieldType(sort.target, path)
            if type == .encryptedBytes { throw Self.encrypted(sort.target.name, recordType: query.recordType, path: path) }
            if type.isList || type == .bytes {
                throw .badRequest("\(path): a \(type.rawValue) field cannot be sorted by")
            }
            if type == .location, sort.relativeLocation == nil {
                throw .badRequest("\(path): sorting by a LOCATION field needs a relativeLocation to measure distances from")
            }
            if type != .location, sort.relativeLocation != nil {
                throw .badRequest("\(path): relativeLocation only applies to LOCATION fields, and this field is \(type.rawValue)")
            }
            require(sort.target, .sortable)
        }
        if query.filters.isEmpty && query.sorts.isEmpty {
            require(.system(.recordName), .queryable)
        }
        self.original = query
        self.query = checked
        self.requirements = requirements
        self.fieldTypes = fieldTypes
    }

    /// The refusal of a filter or sort on an encrypted field: the server holds only ciphertext
    /// (CloudKit does not index encrypted fields either).
    static func encrypted(_ field: String, recordType: String, path: String) -> CloudKitError {
        .badRequest(
            "\(path): '\(field)' of '\(recordType)' is an encrypted field (ENCRYPTED_BYTES): the server holds only "
                + "ciphertext and cannot filter or sort by it; fetch the records and filter them on the device")
    }

    /// The requirements `type` does not meet.
    public func missingIndexes(in type: RecordTypeSchema) -> [IndexRequirement] {
        requirements.filter { !$0.isMet(by: type) }
    }

    /// The filter's value, checked against the field's type and coerced to it.
    static func check(_ filter: QueryFilter, fieldType: FieldType, path: String, recordType: String) throws(CloudKitError)
        -> FieldValue
    {
        let comparator = filter.comparator
        let element = fieldType.elementType
        func mismatch(_ expected: String) -> CloudKitError {
            .badRequest(
                "\(path): \(comparator.rawValue) needs \(expected), but '\(filter.target.name)' of '\(recordType)' "
                    + "is \(fieldType.rawValue)")
        }
        func coerce(_ value: FieldValue, to type: FieldType) throws(CloudKitError) -> FieldValue {
            if let coerced = QueryPlan.coerce(value, to: type) { return coerced }
            throw .badRequest(
                "\(path): fieldValue is \(value.type.rawValue), but '\(filter.target.name)' of '\(recordType)' "
                    + "compares with \(type.rawValue) values")
        }
        if fieldType == .encryptedBytes { throw encrypted(filter.target.name, recordType: recordType, path: path) }
        if fieldType == .bytes || element == .bytes {
            throw .badRequest("\(path): '\(filter.target.name)' of '\(recordType)' is \(fieldType.rawValue), which cannot be queried")
        }
        switch comparator {
        case .equals, .notEquals, .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals:
            guard element == nil else { throw mismatch("a single-valued field (use the LIST_ comparators on lists)") }
            guard fieldType != .location else { throw mismatch("a comparable field (use NEAR on locations)") }
            return try coerce(filter.value, to: fieldType)
        case .in, .notIn:
            // On a list field: whether some member (no member) is one of the values.
            guard fieldType != .location else { throw mismatch("a comparable field (use NEAR on locations)") }
            return try coerce(filter.value, to: element == nil ? fieldType.listType! : fieldType)
        case .near:
            guard fieldType == .location else { throw mismatch("a LOCATION field") }
            return filter.value
        case .containsAllTokens, .containsAnyTokens:
            guard fieldType == .string || fieldType == .stringList else { throw mismatch("a STRING or STRING_LIST field") }
            guard case .string = filter.value else {
                throw .badRequest("\(path): \(comparator.rawValue) compares with a STRING of tokens")
            }
            return filter.value
        case .listContains, .notListContains:
            guard let element else { throw mismatch("a list field") }
            return try coerce(filter.value, to: element)
        case .notListContainsAny, .listContainsAll, .notListContainsAll:
            guard element != nil else { throw mismatch("a list field") }
            return try coerce(filter.value, to: fieldType)
        case .beginsWith, .notBeginsWith:
            guard fieldType == .string || fieldType == .reference else { throw mismatch("a STRING field") }
            guard case .string = filter.value else { throw .badRequest("\(path): \(comparator.rawValue) compares with a STRING prefix") }
            return filter.value
        case .listMemberBeginsWith, .notListMemberBeginsWith:
            guard fieldType == .stringList else { throw mismatch("a STRING_LIST field") }
            guard case .string = filter.value else { throw .badRequest("\(path): \(comparator.rawValue) compares with a STRING prefix") }
            return filter.value
        }
    }

    /// A filter value as a value of `type`: numbers convert between INT64, DOUBLE and
    /// TIMESTAMP; a STRING names the record of a REFERENCE; a REFERENCE names a record for
    /// the system fields that hold record names. `nil` when the kinds differ.
    static func coerce(_ value: FieldValue, to type: FieldType) -> FieldValue? {
        if let element = type.elementType { return SchemaRules.coerceMembers(of: value, to: element, with: coerce) }
        switch (value, type) {
        case (.string, .string), (.int64, .int64), (.double, .double), (.timestamp, .timestamp),
            (.location, .location), (.reference, .reference):
            return value
        case (.reference(let reference), .string): return .string(reference.recordName)
        case (.string(let name), .reference): return .reference(Reference(recordName: name))
        case (.int64(let number), .timestamp): return .timestamp(number)
        case (.double(let number), .timestamp):
            return number.rounded() == number && abs(number) < 9e18 ? .timestamp(Int64(number)) : nil
        case (.int64, .double), (.timestamp, .int64), (.timestamp, .double), (.double, .int64): return value
        default: return nil
        }
    }
}

/// One index a query needs: a kind of index on a field or system field. The pseudo-field
/// ``QueryFilter/Target/searchableFields`` (a token search without a field) needs some
/// SEARCHABLE field.
public struct IndexRequirement: Sendable, Hashable, CustomStringConvertible {
    public var target: QueryFilter.Target
    public var kind: IndexKind

    public init(target: QueryFilter.Target, kind: IndexKind) {
        self.target = target
        self.kind = kind
    }

    /// Whether the search spans every text field of the record.
    public var isAllTokens: Bool { target == .searchableFields }

    public func isMet(by type: RecordTypeSchema) -> Bool {
        if isAllTokens { return type.fields.values.contains { $0.indexes.contains(.searchable) } }
        return type.indexes(on: target).contains(kind)
    }

    /// `title` is not SEARCHABLE …
    public var description: String { "\(target.name) \(kind.rawValue)" }
}

extension QueryFilter.Target {
    /// The name a client uses: the field name, or the system field's name.
    public var name: String {
        switch self {
        case .field(let name): return name
        case .system(let field): return field.rawValue
        case .searchableFields: return "___all"
        }
    }
}

extension QueryFilter.SystemField {
    /// The type of the values the evaluator sees for this field: STRING for record and user
    /// record names, TIMESTAMP for times.
    var valueType: FieldType {
        switch self {
        case .recordName, .createdUserRecordName, .modifiedUserRecordName: return .string
        case .createdTimestamp, .modifiedTimestamp: return .timestamp
        }
    }
}

extension RecordTypeSchema {
    /// Adds what `requirements` need (in development, on first use). Searching all tokens
    /// makes every text field SEARCHABLE.
    public mutating func addIndexes(for requirements: [IndexRequirement]) {
        for requirement in requirements {
            addIndexes([requirement.kind], on: requirement.target)
        }
    }
}
