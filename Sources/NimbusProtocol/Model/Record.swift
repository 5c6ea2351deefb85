/// Who changed a record, when, and from which device.
public struct RecordStamp: Sendable, Hashable {
    /// Milliseconds since the epoch.
    public var timestamp: Int64
    public var userRecordName: String?
    public var deviceID: String?

    public init(timestamp: Int64, userRecordName: String? = nil, deviceID: String? = nil) {
        self.timestamp = timestamp
        self.userRecordName = userRecordName
        self.deviceID = deviceID
    }
}

/// A record as CloudKit Web Services describes it: a name, a type, typed fields and the
/// system fields the server maintains (`recordChangeTag`, `created`, `modified`).
public struct Record: Sendable, Hashable {
    public var recordName: String
    public var recordType: String
    /// The server's version tag of the record; send it back on a locked save.
    public var recordChangeTag: String?
    public var fields: [String: FieldValue]
    public var created: RecordStamp?
    public var modified: RecordStamp?
    /// `true` for a deletion marker in a change feed.
    public var deleted: Bool
    public var zoneID: ZoneID?

    public init(
        recordName: String, recordType: String, recordChangeTag: String? = nil, fields: [String: FieldValue] = [:],
        created: RecordStamp? = nil, modified: RecordStamp? = nil, deleted: Bool = false, zoneID: ZoneID? = nil
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.recordChangeTag = recordChangeTag
        self.fields = fields
        self.created = created
        self.modified = modified
        self.deleted = deleted
        self.zoneID = zoneID
    }

    public subscript(field: String) -> FieldValue? {
        get { fields[field] }
        set { fields[field] = newValue }
    }
}
