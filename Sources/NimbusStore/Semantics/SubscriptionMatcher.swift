import NimbusProtocol

/// What a commit changed, as subscriptions see it.
public enum CommitEvent: Sendable {
    /// Records of one zone: each one's state before (nil if it did not exist) and after.
    case records(zoneName: String, changes: [(before: StoredRecord?, after: StoredRecord)])
    /// Zones created and deleted.
    case zones(created: [String], deleted: [String])

    /// The record types the event touches (empty for zone events).
    public var recordTypes: Set<String> {
        guard case .records(_, let changes) = self else { return [] }
        var types = Set<String>()
        var last = ""  // a batch's records are mostly of one type: hash each type once
        for change in changes {
            if change.after.recordType != last {
                last = change.after.recordType
                types.insert(last)
            }
            if let before = change.before, before.recordType != last { types.insert(before.recordType) }
        }
        return types
    }
}

/// A notification to create: which subscription fired and about what.
public struct NotificationDraft: Sendable {
    public var subscription: StoredSubscription
    public var kind: NotificationKind
    public var zoneName: String?
    public var recordName: String?
    public var reason: QueryNotificationReason?
    /// For query notifications: the record (after the change; before it for deletes), to
    /// read `desiredKeys` and localization arguments from.
    public var record: Record?

    public init(
        subscription: StoredSubscription, kind: NotificationKind, zoneName: String? = nil, recordName: String? = nil,
        reason: QueryNotificationReason? = nil, record: Record? = nil
    ) {
        self.subscription = subscription
        self.kind = kind
        self.zoneName = zoneName
        self.recordName = recordName
        self.reason = reason
        self.record = record
    }
}

/// The notifications a commit creates, and the `firesOnce` subscriptions it used up.
public struct SubscriptionMatch: Sendable {
    public var drafts: [NotificationDraft] = []
    /// Subscriptions that fired with `firesOnce`: the engine deletes them in the same transaction.
    public var firedOnce: [StoredSubscription] = []
}

/// Which subscriptions a commit fires, as a pure computation (no I/O), shared by every engine.
///
/// - A database subscription fires once per commit that changes anything in the database,
///   zones created and deleted included.
/// - A zone subscription fires once per commit that changes records in its zone (of its
///   record type, when it has one), and when its zone is deleted or created again.
/// - A query subscription is evaluated on each changed record before and after the change:
///   *create* fires when a new record matches, *update* when an existing record matches
///   after the change (so an update that brings a record into the filter fires, and one
///   that takes it out does not, as in CloudKit), *delete* when a deleted record matched
///   before. Each firing is one notification about one record; with `firesOnce` the
///   subscription fires for the first such record and is then deleted.
public enum SubscriptionMatcher {
    public static func match(_ event: CommitEvent, subscriptions: [StoredSubscription], zoneID: (String) -> ZoneID)
        -> SubscriptionMatch
    {
        var result = SubscriptionMatch()
        let ordered = subscriptions.sorted { ($0.owner, $0.subscription.subscriptionID) < ($1.owner, $1.subscription.subscriptionID) }
        switch event {
        case .records(let zoneName, let changes):
            guard !changes.isEmpty else { return result }
            var parsed = RecordCache(changes: changes, zoneID: zoneID(zoneName))
            for stored in ordered {
                switch stored.subscription.kind {
                case .database:
                    result.drafts.append(NotificationDraft(subscription: stored, kind: .database))
                case .zone(let name, let recordType):
                    guard name == zoneName else { continue }
                    let touched = changes.contains { change in
                        recordType == nil || change.after.recordType == recordType || change.before?.recordType == recordType
                    }
                    if touched {
                        result.drafts.append(NotificationDraft(subscription: stored, kind: .recordZone, zoneName: zoneName))
                    }
                case .query(let query, let scope, let firesOn, let firesOnce):
                    if case .zone(let name) = scope, name != zoneName { continue }
                    for index in changes.indices {
                        guard let (reason, record) = parsed.evaluate(query, firesOn: firesOn, at: index) else { continue }
                        result.drafts.append(
                            NotificationDraft(
                                subscription: stored, kind: .query, zoneName: zoneName,
                                recordName: changes[index].after.recordName, reason: reason, record: record))
                        if firesOnce {
                            result.firedOnce.append(stored)
                            break
                        }
                    }
                }
            }
        case .zones(let created, let deleted):
            guard !created.isEmpty || !deleted.isEmpty else { return result }
            for stored in ordered {
                switch stored.subscription.kind {
                case .database:
                    result.drafts.append(NotificationDraft(subscription: stored, kind: .database))
                case .zone(let name, _):
                    if deleted.contains(name) || created.contains(name) {
                        result.drafts.append(NotificationDraft(subscription: stored, kind: .recordZone, zoneName: name))
                    }
                case .query:
                    continue
                }
            }
        }
        return result
    }
}

/// Parses each changed record at most once, and only when a query subscription needs it.
private struct RecordCache {
    let changes: [(before: StoredRecord?, after: StoredRecord)]
    let zoneID: ZoneID
    private var records: [Int: (before: Record?, after: Record?)] = [:]

    init(changes: [(before: StoredRecord?, after: StoredRecord)], zoneID: ZoneID) {
        self.changes = changes
        self.zoneID = zoneID
    }

    /// The reason a query subscription fires for the change at `index`, with the record it
    /// is about, or `nil`.
    mutating func evaluate(_ query: RecordQuery, firesOn: Set<SubscriptionDefinition.FiringEvent>, at index: Int)
        -> (QueryNotificationReason, Record)?
    {
        let change = changes[index]
        let liveBefore = change.before.flatMap { $0.deleted ? nil : $0 }
        guard change.after.recordType == query.recordType || liveBefore?.recordType == query.recordType else {
            return nil
        }
        let (before, after) = parsed(index)
        switch (liveBefore, change.after.deleted) {
        case (nil, false):
            guard firesOn.contains(.create), let after, query.matches(after) else { return nil }
            return (.recordCreated, after)
        case (.some, false):
            guard firesOn.contains(.update), let after, query.matches(after) else { return nil }
            return (.recordUpdated, after)
        case (.some, true):
            guard firesOn.contains(.delete), let before, query.matches(before) else { return nil }
            return (.recordDeleted, before)
        case (nil, true):
            return nil
        }
    }

    private mutating func parsed(_ index: Int) -> (before: Record?, after: Record?) {
        if let cached = records[index] { return cached }
        let change = changes[index]
        // A row whose stored fields do not parse matches nothing rather than failing the commit.
        let before = change.before.flatMap { $0.deleted ? nil : $0.record(zoneID: zoneID) }
        let after = change.after.deleted ? nil : change.after.record(zoneID: zoneID)
        records[index] = (before, after)
        return (before, after)
    }
}
