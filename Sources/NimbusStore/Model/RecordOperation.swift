import NimbusProtocol

/// The `operationType` of a `records/modify` operation.
public enum RecordOperationType: String, Sendable, Hashable, CaseIterable {
    /// Create a record; EXISTS if one with that name exists.
    case create
    /// Change the fields sent, keep the others; needs a current `recordChangeTag`.
    case update
    /// Change the fields sent whatever the change tag; creates the record if missing.
    case forceUpdate
    /// Replace all fields (fields not sent are removed); needs a current `recordChangeTag`.
    case replace
    /// Replace all fields whatever the change tag; creates the record if missing.
    case forceReplace
    /// Delete by record name; a `recordChangeTag` given must be current (a locked delete),
    /// without one it deletes as ``forceDelete`` does, as CloudKit deletes by record ID.
    case delete
    /// Delete whatever the change tag.
    case forceDelete

    public var isDelete: Bool { self == .delete || self == .forceDelete }
    /// Whether the operation checks `recordChangeTag` (a locked save); `delete` checks the
    /// tag only when one is given (``ModifyPlanner``).
    public var isLocked: Bool { self == .update || self == .replace || self == .delete }
}

/// One operation of a modify request, validated and ready for the store.
public struct RecordOperation: Sendable {
    public var type: RecordOperationType
    public var record: Record
    /// `record.fields` serialized as stored (assets without their receipts); computed once by
    /// the caller (it also checks the size limit).
    public var fieldsJSON: String

    public init(type: RecordOperationType, record: Record) {
        self.type = type
        self.record = record
        self.fieldsJSON = Record.fieldsJSONText(record.fields.mapValues(\.storedForm))
    }
}

/// Who is making a change: the user record name in the database's container and, when the
/// client named one, its device.
public struct Caller: Sendable, Hashable {
    public var userRecordName: String
    public var deviceID: String?
    /// Server-to-server keys act as the container's administrator.
    public var isAdmin: Bool
    /// The W3C `traceparent` of the traced write (its `commit` span), carried into the push
    /// payloads of the notifications it creates (`"nimbus": {"traceparent": …}`), so the
    /// devices that fetch because of them continue the same trace.
    public var traceParent: String?

    public init(userRecordName: String, deviceID: String? = nil, isAdmin: Bool = false, traceParent: String? = nil) {
        self.userRecordName = userRecordName
        self.deviceID = deviceID
        self.isAdmin = isAdmin
        self.traceParent = traceParent
    }
}

/// The outcome of one operation, in request order.
public enum RecordResult: Sendable, Equatable {
    case saved(StoredRecord)
    case deleted(recordName: String)
    case failed(CloudKitError)
}

/// What one committed modify request changed; the push layer matches subscriptions on it.
public struct CommitSummary: Sendable {
    public var database: DatabaseKey
    public var zoneName: String
    /// The database version after the commit.
    public var version: Int64
    /// Each changed record: its state before (nil if it did not exist) and after (a tombstone
    /// for deletes, cascades included).
    public var changes: [(before: StoredRecord?, after: StoredRecord)]
    public var caller: Caller
    /// The notifications the commit created (in the same transaction), for the push hub.
    public var notifications: [StoredNotification]

    public init(
        database: DatabaseKey, zoneName: String, version: Int64,
        changes: [(before: StoredRecord?, after: StoredRecord)], caller: Caller,
        notifications: [StoredNotification] = []
    ) {
        self.database = database
        self.zoneName = zoneName
        self.version = version
        self.changes = changes
        self.caller = caller
        self.notifications = notifications
    }
}

/// The result of a modify request.
public struct ModifyOutcome: Sendable {
    public var results: [RecordResult]
    /// `nil` when nothing was written.
    public var commit: CommitSummary?

    public init(results: [RecordResult], commit: CommitSummary?) {
        self.results = results
        self.commit = commit
    }
}
