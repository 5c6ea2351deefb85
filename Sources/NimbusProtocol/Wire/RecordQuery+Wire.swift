extension RecordQuery {
    /// Decodes a query dictionary `{recordType, filterBy?, sortBy?}`.
    package init(wire reader: WireReader) throws(CloudKitError) {
        _ = try reader.object()
        let recordType = try reader.required("recordType").string()
        guard !recordType.isEmpty else { throw .badRequest("'\(reader.path).recordType' must not be empty") }
        var filters: [QueryFilter] = []
        for filterReader in try reader.optional("filterBy")?.array() ?? [] {
            filters.append(try QueryFilter(wire: filterReader))
        }
        var sorts: [QuerySort] = []
        for sortReader in try reader.optional("sortBy")?.array() ?? [] {
            sorts.append(try QuerySort(wire: sortReader))
        }
        self.init(recordType: recordType, filters: filters, sorts: sorts)
    }

    /// The query dictionary.
    package var wireJSON: JSON {
        var members: [String: JSON] = ["recordType": .string(recordType)]
        if !filters.isEmpty { members["filterBy"] = .array(filters.map(\.wireJSON)) }
        if !sorts.isEmpty { members["sortBy"] = .array(sorts.map(\.wireJSON)) }
        return .object(members)
    }
}

extension QueryFilter.Target {
    /// The field names that also mean ``searchableFields`` in a token search: `___all` (the
    /// name of CloudKit's all-text index) and `allTokens`.
    package static let searchableFieldsNames: Set<String> = ["___all", "allTokens"]

    /// Reads `fieldName` or `systemFieldName` (exactly one); a token search may give neither,
    /// or a name of ``searchableFieldsNames``, to search every string field (`searchableFields`).
    init(wire reader: WireReader, allowsSearchableFields: Bool = false) throws(CloudKitError) {
        let fieldName = try reader.optionalString("fieldName")
        let systemName = try reader.optionalString("systemFieldName")
        switch (fieldName, systemName) {
        case (let name?, nil):
            guard !name.isEmpty else { throw .badRequest("'\(reader.path).fieldName' must not be empty") }
            self = allowsSearchableFields && Self.searchableFieldsNames.contains(name) ? .searchableFields : .field(name)
        case (nil, let name?):
            guard let field = QueryFilter.SystemField(wireName: name) else {
                throw .badRequest(
                    "'\(reader.path).systemFieldName': unknown system field '\(name)'; expected one of "
                        + QueryFilter.SystemField.allCases.map(\.rawValue).joined(separator: ", "))
            }
            self = .system(field)
        case (.some, .some):
            throw .badRequest("'\(reader.path)' has both fieldName and systemFieldName; give one")
        case (nil, nil):
            guard allowsSearchableFields else {
                throw .badRequest("'\(reader.path)' needs a fieldName or a systemFieldName")
            }
            self = .searchableFields
        }
    }

    func write(into members: inout [String: JSON]) {
        switch self {
        case .field(let name): members["fieldName"] = .string(name)
        case .system(let field): members["systemFieldName"] = .string(field.rawValue)
        case .searchableFields: break
        }
    }
}

extension QueryFilter {
    /// Decodes a filter dictionary `{comparator, fieldName | systemFieldName, fieldValue, distance?}`.
    package init(wire reader: WireReader) throws(CloudKitError) {
        _ = try reader.object()
        let name = try reader.required("comparator").string()
        guard let comparator = Comparator(rawValue: name.uppercased()) else {
            throw .badRequest(
                "'\(reader.path).comparator': unknown comparator '\(name)'; expected one of "
                    + Comparator.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let target = try Target(wire: reader, allowsSearchableFields: comparator.isTokenSearch)
        let value = try FieldValue(wire: reader.required("fieldValue"))
        // Only NEAR has a distance; others ignore one sent (CloudKit does), so it is not kept.
        var distance: Double?
        if comparator == .near {
            guard case .location = value else {
                throw .badRequest("'\(reader.path).fieldValue': NEAR compares with a LOCATION value")
            }
            distance = try reader.optional("distance")?.double()
            guard let distance, distance.isFinite, distance >= 0 else {
                throw .badRequest("'\(reader.path).distance': NEAR needs a distance in meters (a finite number, 0 or more)")
            }
        }
        if comparator.takesList, case .list = value {
        } else if comparator.takesList {
            throw .badRequest("'\(reader.path).fieldValue': \(comparator.rawValue) compares with a list value")
        }
        self.init(target, comparator, value, distance: distance)
    }

    /// The filter dictionary.
    package var wireJSON: JSON {
        var members: [String: JSON] = ["comparator": .string(comparator.rawValue), "fieldValue": value.wireJSON()]
        target.write(into: &members)
        if let distance { members["distance"] = .double(distance) }
        return .object(members)
    }
}

extension QuerySort {
    /// Decodes a sort dictionary `{fieldName | systemFieldName, ascending?, relativeLocation?}`.
    package init(wire reader: WireReader) throws(CloudKitError) {
        _ = try reader.object()
        let target = try QueryFilter.Target(wire: reader)
        let location = try reader.optional("relativeLocation").map { r throws(CloudKitError) in
            // Accept both a bare location and a field value dictionary {value, type}.
            let value = try FieldValue(wire: r)
            guard case .location(let location) = value else {
                throw CloudKitError.badRequest("'\(r.path)' must be a location")
            }
            return location
        }
        self.init(target, ascending: try reader.optionalBool("ascending") ?? true, relativeLocation: location)
    }

    /// The sort dictionary.
    package var wireJSON: JSON {
        var members: [String: JSON] = ["ascending": .bool(ascending)]
        target.write(into: &members)
        if let relativeLocation { members["relativeLocation"] = FieldValue.location(relativeLocation).wireJSON() }
        return .object(members)
    }
}
