import NimbusProtocol

/// How records and indexes must fit a ``ContainerSchema``, as a pure computation shared by
/// every engine and the CLI.
///
/// - In **development** a record of a new type, or with a new field, extends the schema (the
///   field's type is the type of its first saved value); in **production** it is refused.
/// - In both, a value whose type differs from the field's is refused: CloudKit never changes
///   a field's type. Numbers are coerced where nothing is lost (an INT64 value saved to a
///   DOUBLE or TIMESTAMP field, as clients that send untyped numbers do), and an empty list
///   takes the field's list type.
/// - Field names beginning with `___` are CloudKit's system fields and cannot be saved.
/// - The user record type (`Users`) is in every schema, as in CloudKit.
public enum SchemaRules {
    /// The record type of user records, which every schema has.
    public static let userRecordType = "Users"

    /// Checks the records an operation batch saves against `schema`, coercing compatible
    /// values to the schema's types in place.
    ///
    /// - Returns: in development, the schema extended with the new types and fields, or `nil`
    ///   when nothing was new; in production always `nil`.
    /// - Throws: BAD_REQUEST naming the record, type and field.
    public static func admit(
        _ records: inout [Record], to schema: ContainerSchema, environment: ContainerEnvironment
    ) throws(CloudKitError) -> ContainerSchema? {
        var extended = schema
        var changed = false
        for index in records.indices {
            let record = records[index]
            if record.recordType.hasPrefix("___") || record.recordType.isEmpty {
                throw CloudKitError(
                    .badRequest, "record type name '\(record.recordType)' is reserved", recordName: record.recordName)
            }
            var type = extended.recordTypes[record.recordType]
            if type == nil, record.recordType == userRecordType, environment == .production {
                // Every schema has the user record type; its fields still need a deploy.
                type = RecordTypeSchema()
            }
            if type == nil {
                guard environment == .development else {
                    throw CloudKitError(
                        .badRequest,
                        "record type '\(record.recordType)' is not in the production schema (record "
                            + "'\(record.recordName)'); save it in development and deploy the schema with "
                            + "`nimbus schema deploy`",
                        recordName: record.recordName)
                }
                type = RecordTypeSchema()
                changed = true
            }
            for (name, value) in record.fields.sorted(by: { $0.key < $1.key }) {
                guard !name.hasPrefix("___") else {
                    throw CloudKitError(
                        .badRequest,
                        "field name '\(name)' of record '\(record.recordName)' is reserved: names beginning with "
                            + "'___' are CloudKit's system fields",
                        recordName: record.recordName)
                }
                guard let field = type!.fields[name] else {
                    guard environment == .development else {
                        throw CloudKitError(
                            .badRequest,
                            "field '\(name)' of record type '\(record.recordType)' is not in the production schema "
                                + "(record '\(record.recordName)'); add it in development and deploy the schema",
                            recordName: record.recordName)
                    }
                    type!.fields[name] = FieldSchema(type: value.type)
                    changed = true
                    continue
                }
                guard let coerced = coerce(value, to: field.type) else {
                    throw CloudKitError(
                        .badRequest,
                        "field '\(name)' of record type '\(record.recordType)' is \(field.type.rawValue) in the "
                            + "\(environment.rawValue) schema; record '\(record.recordName)' gives it a "
                            + "\(value.type.rawValue) value (a field's type cannot change)",
                        recordName: record.recordName)
                }
                if coerced != value { records[index].fields[name] = coerced }
            }
            extended.recordTypes[record.recordType] = type
        }
        return changed ? extended : nil
    }

    /// Refuses an encrypted value (`ENCRYPTED_BYTES`) in the public database: as in CloudKit,
    /// only private and shared zones hold encrypted fields (a public record is for everyone,
    /// and no one key reaches everyone).
    /// - Throws: BAD_REQUEST naming the record and field.
    public static func checkEncryptedFields(of record: Record, scope: DatabaseScope) throws(CloudKitError) {
        guard scope == .public else { return }
        for (name, value) in record.fields.sorted(by: { $0.key < $1.key }) where value.type == .encryptedBytes {
            throw CloudKitError(
                .badRequest,
                "field '\(name)' of record '\(record.recordName)' is encrypted (ENCRYPTED_BYTES): the public database "
                    + "holds no encrypted fields, as in CloudKit; save it in a private or shared zone",
                recordName: record.recordName)
        }
    }

    /// `value` as a value of `type`, when it is one or converts without loss; `nil` otherwise.
    public static func coerce(_ value: FieldValue, to type: FieldType) -> FieldValue? {
        if value.type == type { return value }
        if let element = type.elementType { return coerceMembers(of: value, to: element, with: coerce) }
        switch (value, type) {
        case (.int64(let number), .double): return .double(Double(number))
        case (.int64(let number), .timestamp): return .timestamp(number)
        default: return nil
        }
    }

    /// The CONFLICT an engine's ``SchemaStore/updateSchema(_:container:environment:expectedVersion:)``
    /// throws when the schema's version is not the one the caller read.
    public static func versionConflict(
        container: String, environment: ContainerEnvironment, current: Int64, expected: Int64
    ) -> CloudKitError {
        CloudKitError(
            .conflict,
            "the \(environment.rawValue) schema of \(container) changed meanwhile (version \(current), "
                + "expected \(expected)); read it again")
    }

    /// A list `value` with each member converted to `element` by `convert`; `nil` when `value`
    /// is not a list or a member does not convert.
    static func coerceMembers(
        of value: FieldValue, to element: FieldType, with convert: (FieldValue, FieldType) -> FieldValue?
    ) -> FieldValue? {
        guard case .list(_, let members) = value else { return nil }
        var coerced: [FieldValue] = []
        for member in members {
            guard let converted = convert(member, element) else { return nil }
            coerced.append(converted)
        }
        return .list(elementType: element, coerced)
    }

    /// Checks that `indexes` suit a field of `type`: SEARCHABLE needs text (STRING or
    /// STRING_LIST); BYTES, ASSET and encrypted fields (ENCRYPTED_BYTES) cannot be indexed;
    /// lists cannot be SORTABLE.
    public static func checkIndexes(_ indexes: Set<IndexKind>, field: String, type: FieldType, recordType: String)
        throws(CloudKitError)
    {
        let element = type.elementType ?? type
        if type == .encryptedBytes, !indexes.isEmpty {
            throw .badRequest(
                "field '\(field)' of record type '\(recordType)' is encrypted (ENCRYPTED_BYTES): the server holds only "
                    + "ciphertext, so it cannot be QUERYABLE, SORTABLE or SEARCHABLE")
        }
        if indexes.contains(.searchable), element != .string {
            throw .badRequest(
                "field '\(field)' of record type '\(recordType)' is \(type.rawValue): only STRING and STRING_LIST "
                    + "fields can be SEARCHABLE")
        }
        if element == .bytes || element == .asset, !indexes.isEmpty {
            throw .badRequest("field '\(field)' of record type '\(recordType)' is \(type.rawValue), which cannot be indexed")
        }
        if type.isList, indexes.contains(.sortable) {
            throw .badRequest(
                "field '\(field)' of record type '\(recordType)' is \(type.rawValue): list fields cannot be SORTABLE")
        }
    }
}
