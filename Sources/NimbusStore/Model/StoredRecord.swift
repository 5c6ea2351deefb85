import Logging
import NimbusProtocol

/// A record as the store keeps it: the fields as canonical JSON text (so reads can splice
/// them into responses without re-encoding), the system fields, and the change-log version.
public struct StoredRecord: Sendable, Equatable {
    public var recordName: String
    public var recordType: String
    /// `{"name": {"value": …, "type": …}, …}` as written by `Record.fieldsJSON`.
    public var fieldsJSON: String
    public var created: RecordStamp
    public var modified: RecordStamp
    /// The database version of the record's last change (create, update or delete).
    public var version: Int64
    /// The database version at which this incarnation of the record was created.
    public var createdVersion: Int64
    /// A tombstone: the record was deleted at ``version``.
    public var deleted: Bool

    public init(
        recordName: String, recordType: String, fieldsJSON: String, created: RecordStamp, modified: RecordStamp,
        version: Int64, createdVersion: Int64, deleted: Bool
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.fieldsJSON = fieldsJSON
        self.created = created
        self.modified = modified
        self.version = version
        self.createdVersion = createdVersion
        self.deleted = deleted
    }

    /// The change tag clients send back on locked saves: the version in base 36.
    public var changeTag: String { String(version, radix: 36) }

    /// The parsed fields.
    ///
    /// A stored value that does not decode (one an older release let in, such as a DOUBLE
    /// stored as `null`) never fails a read: that field of this record is left out and
    /// logged, and every other field and record reads as usual. The v6 repair migration
    /// removes such values (``repairedFieldsJSON()``).
    public func fields() -> [String: FieldValue] {
        let decoded = decodedFields()
        for skipped in decoded.skipped {
            Self.logger.warning(
                """
                record '\(recordName)' (\(recordType)): stored field '\(skipped.name)' does not decode and is left \
                out of reads: \(skipped.error.reason)
                """)
        }
        return decoded.fields
    }

    /// The fields that decode, and the names of those that do not (`""`: the text is not a
    /// JSON object at all).
    func decodedFields() -> (fields: [String: FieldValue], skipped: [(name: String, error: CloudKitError)]) {
        let json: JSON
        do {
            json = try JSON.parse(fieldsJSON)
        } catch {
            return ([:], [("", CloudKitError(.internalError, "stored fields are not JSON: \(error)"))])
        }
        return Record.fields(fromStored: json)
    }

    /// The fields text without the values that do not decode, written canonically; `nil`
    /// when every stored value decodes (the record needs no repair).
    public func repairedFieldsJSON() -> String? {
        guard !deleted else { return nil }
        let decoded = decodedFields()
        guard !decoded.skipped.isEmpty else { return nil }
        return Record.fieldsJSONText(decoded.fields)
    }

    /// The record in the protocol model (see ``fields()`` for stored values that do not decode).
    public func record(zoneID: ZoneID) -> Record {
        if deleted { return Record(recordName: recordName, recordType: recordType, deleted: true, zoneID: zoneID) }
        return Record(
            recordName: recordName, recordType: recordType, recordChangeTag: changeTag, fields: fields(),
            created: created, modified: modified, deleted: false, zoneID: zoneID)
    }

    static let logger = Logger(label: "nimbus.store")

    /// The reserved field holding a record's `parent` (a record of a shared hierarchy is
    /// shared through its parent chain).
    public static let parentField = "cloudkit.parent"
    private static let parentMarker = Array("\"\(parentField)\"".utf8)

    /// The fields a tombstone keeps of the record it replaces: only its ``parentField``, so
    /// that a participant of a shared hierarchy learns of the deletion of a record that was
    /// shared with them and of no other; `{}` for a record without a parent.
    static func tombstoneFieldsJSON(of record: StoredRecord) -> String {
        guard FieldsText.contains(parentMarker, in: record.fieldsJSON), let parent = record.fields()[parentField] else { return "{}" }
        return Record.fieldsJSONText([parentField: parent])
    }
}
