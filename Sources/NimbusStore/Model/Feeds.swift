import NimbusProtocol

/// A page of a zone's record change feed.
public struct RecordChangesPage: Sendable {
    /// Latest state of each record changed since the token, in version order; tombstones
    /// for records deleted since then.
    public var records: [StoredRecord]
    public var syncToken: String
    public var moreComing: Bool

    public init(records: [StoredRecord], syncToken: String, moreComing: Bool) {
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// A page of a database's zone feed (`changes/database`, `zones/changes`).
public struct ZoneChangesPage: Sendable {
    public var zones: [ZoneState]
    public var syncToken: String
    public var moreComing: Bool

    public init(zones: [ZoneState], syncToken: String, moreComing: Bool) {
        self.zones = zones
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// One operation of `zones/modify`.
public enum ZoneOperation: Sendable, Equatable {
    case create(zoneName: String)
    case delete(zoneName: String)
}

/// The outcome of one zone operation.
public enum ZoneResult: Sendable, Equatable {
    case saved(ZoneState)
    case deleted(zoneName: String)
    case failed(zoneName: String, error: CloudKitError)
}


/// The result of `zones/modify`.
public struct ZoneModifyOutcome: Sendable {
    /// One result per operation, in request order.
    public var results: [ZoneResult]
    /// The notifications the change created (in the same transaction), for the push hub.
    public var notifications: [StoredNotification]

    public init(results: [ZoneResult], notifications: [StoredNotification] = []) {
        self.results = results
        self.notifications = notifications
    }
}

/// What a compaction pass removed.
public struct CompactionReport: Sendable, Equatable {
    public var tombstonesRemoved: Int
    public var zonesRemoved: Int

    public init(tombstonesRemoved: Int, zonesRemoved: Int) {
        self.tombstonesRemoved = tombstonesRemoved
        self.zonesRemoved = zonesRemoved
    }
}
