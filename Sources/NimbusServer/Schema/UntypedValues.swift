import NimbusProtocol
import NimbusStore

/// The values a saved record sent without `type` (Apple documents `type` as optional when
/// saving), kept as sent so the schema can type them: where the schema knows the field, the
/// value is read as the field's type (``FieldValue/typed(untyped:as:)``: a base64 string for
/// BYTES, an asset dictionary for ASSET, fractional milliseconds for TIMESTAMP); a new field
/// keeps the type inferred from the value (``FieldValue/init(wire:)``).
struct UntypedValues: Sendable {
    /// The untyped values by field name.
    var fields: [String: WireReader]

    /// No untyped values.
    init() {
        fields = [:]
    }

    init(record reader: WireReader) throws(CloudKitError) {
        fields = try Record.untypedFieldValues(of: reader)
    }

    /// Replaces `record`'s inferred values of the fields `schema` types.
    /// - Throws: BAD_REQUEST naming the record, field and type when a value is not one of
    ///   the field's type.
    func apply(to record: inout Record, in schema: ContainerSchema) throws(CloudKitError) {
        for (name, value) in fields {
            // Only the record's own fields (not those the server took out of it, as sharing's).
            guard let inferred = record.fields[name] else { continue }
            guard let field = schema.recordTypes[record.recordType]?.fields[name] else {
                // A new field's type is the value's; an empty list has none to give.
                if case .array(let members) = value.json, members.isEmpty {
                    throw CloudKitError(
                        .badRequest,
                        "'\(value.path)': cannot infer the type of an empty list for the new field '\(name)'; add \"type\"",
                        recordName: record.recordName)
                }
                continue
            }
            guard inferred.type != field.type else { continue }
            do {
                record.fields[name] = try FieldValue.typed(untyped: value, as: field.type)
            } catch {
                throw CloudKitError(
                    .badRequest,
                    "field '\(name)' of record type '\(record.recordType)' is \(field.type.rawValue) in the schema, and "
                        + "its untyped value is not one: \(error.reason)",
                    recordName: record.recordName)
            }
        }
    }
}
