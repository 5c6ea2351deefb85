extension FieldValue {
    /// An untyped value (a field dictionary without `type`, or a bare value) read as a field of
    /// `type`, the type the schema gives the field: Apple documents `type` as optional when
    /// saving, the schema deciding. What converts exactly converts:
    ///
    /// - BYTES (and BYTES_LIST members) from base64 strings;
    /// - ASSET from an asset dictionary, whatever else it carries (`assets/rereference`'s
    ///   answer has `recordName` and `fieldName` too: it is not a REFERENCE here);
    /// - TIMESTAMP from a number of milliseconds; a fractional one (`1795240000123.4`, as a
    ///   client's `Date` arithmetic gives) is truncated toward zero to whole milliseconds, the
    ///   unit CloudKit stores (Apple's reference says only "a number in milliseconds");
    /// - DOUBLE from any number, lists from arrays (an empty one too), and every other type
    ///   as its typed form reads it (``decode(_:as:)``).
    ///
    /// - Throws: BAD_REQUEST naming the value when it is not one of `type`.
    package static func typed(untyped reader: WireReader, as type: FieldType) throws(CloudKitError) -> FieldValue {
        if let element = type.elementType {
            var values: [FieldValue] = []
            for member in try reader.array() { values.append(try typed(untyped: member, as: element)) }
            return .list(elementType: element, values)
        }
        if type == .timestamp, case .number(let text) = reader.json, Int64(text) == nil {
            let millis = try reader.double()
            guard let whole = Int64(exactly: millis.rounded(.towardZero)) else {
                throw .badRequest("'\(reader.path)' is a TIMESTAMP outside the 64-bit range of milliseconds")
            }
            return .timestamp(whole)
        }
        return try decode(reader, as: type)
    }
}

extension FieldValue {
    /// A field of a record a client saves: as ``init(wire:)``, but an untyped empty list,
    /// which says nothing of its type, decodes as an empty STRING_LIST for the schema to type
    /// (an existing list field takes it as its own type; a new field refuses it).
    package static func recordField(wire reader: WireReader) throws(CloudKitError) -> FieldValue {
        let (value, typeName) = try parts(of: reader)
        if typeName == nil, case .array(let members) = value.json, members.isEmpty { return .list(elementType: .string, []) }
        return try FieldValue(wire: reader)
    }
}

extension Record {
    /// The values a record dictionary's `fields` sends without `type`, by field name, as sent
    /// (for the schema to type: ``FieldValue/typed(untyped:as:)``).
    package static func untypedFieldValues(of reader: WireReader) throws(CloudKitError) -> [String: WireReader] {
        guard let fieldsReader = try reader.optional("fields") else { return [:] }
        var untyped: [String: WireReader] = [:]
        for (name, value) in try fieldsReader.object() {
            let (valueReader, typeName) = try FieldValue.parts(of: fieldsReader.reader(for: value, member: name))
            if typeName == nil { untyped[name] = valueReader }
        }
        return untyped
    }
}
