extension NameRules {
    /// Checks the names a record brings: its name (when it has one), its type (when it has
    /// one), its field names, and the record and zone names of its references.
    public static func check(_ record: Record, at path: String) throws(CloudKitError) {
        if !record.recordName.isEmpty { try checkName(record.recordName, at: "\(path).recordName") }
        if !record.recordType.isEmpty {
            try checkIdentifier(record.recordType, at: "\(path).recordType", what: "record type")
        }
        if let zoneID = record.zoneID { try checkName(zoneID.zoneName, at: "\(path).zoneID.zoneName") }
        for (name, value) in record.fields {
            try checkIdentifier(name, at: "\(path).fields", what: "field name")
            try check(value, at: "\(path).fields.\(name).value")
        }
    }

    /// Checks the record and zone names of the references in a value.
    public static func check(_ value: FieldValue, at path: String) throws(CloudKitError) {
        switch value {
        case .reference(let reference):
            try checkName(reference.recordName, at: "\(path).recordName")
            if let zoneID = reference.zoneID { try checkName(zoneID.zoneName, at: "\(path).zoneID.zoneName") }
        case .list(_, let values):
            for (index, element) in values.enumerated() { try check(element, at: "\(path)[\(index)]") }
        default:
            break
        }
    }

    /// Checks a query's record type, the field names of its filters and sorts, and the names
    /// in its filters' values.
    public static func check(_ query: RecordQuery, at path: String) throws(CloudKitError) {
        try checkIdentifier(query.recordType, at: "\(path).recordType", what: "record type")
        for (index, filter) in query.filters.enumerated() {
            if case .field(let name) = filter.target {
                try checkIdentifier(name, at: "\(path).filterBy[\(index)].fieldName", what: "field name")
            }
            try check(filter.value, at: "\(path).filterBy[\(index)].fieldValue.value")
        }
        for (index, sort) in query.sorts.enumerated() {
            if case .field(let name) = sort.target {
                try checkIdentifier(name, at: "\(path).sortBy[\(index)].fieldName", what: "field name")
            }
        }
    }
}
