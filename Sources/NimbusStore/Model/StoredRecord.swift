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
    public func fields() throws(CloudKitError) -> [String: FieldValue] {
        let json: JSON
        do { json = try JSON.parse(fieldsJSON) } catch { throw CloudKitError(.internalError, "stored fields are corrupt: \(error)") }
        return try Record.fields(fromWire: json)
    }

    /// The record in the protocol model.
    public func record(zoneID: ZoneID) throws(CloudKitError) -> Record {
        if deleted { return Record(recordName: recordName, recordType: recordType, deleted: true, zoneID: zoneID) }
        return Record(
            recordName: recordName, recordType: recordType, recordChangeTag: changeTag, fields: try fields(),
            created: created, modified: modified, deleted: false, zoneID: zoneID)
    }
}
