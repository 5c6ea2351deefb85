import NimbusProtocol

/// One transaction of a `records/modify`, as the storage core runs it: what an engine reads
/// first, the order of its effects, the errors, and the answer. The engine performs the
/// steps and decides nothing.
///
/// ```swift
/// // Inside the engine's write transaction (the database's writer or row lock held):
/// var transaction = request                              // a ModifyTransaction
/// var plan = try transaction.plan(
///     zoneIsLive: readZone(transaction.zone)?.deleted == false, rows: readRecords(transaction.names),
///     baseVersion: databaseVersion, assets: readAssets(transaction.receipts, transaction.namedHashes))
/// while let parents = plan.cascadingParents {           // DELETE_SELF children, level by level
///     plan = transaction.cascade(children: readLiveChildren(of: parents))
/// }
/// guard transaction.writes(plan) else { return transaction.unchanged(plan) }   // roll back
/// // Write, in this order: the records (`plan.changes`), their DELETE_SELF references, their
/// // asset references, the usage (QUOTA_EXCEEDED: ``DatabaseUsage/exceeding(_:grownBy:)``
/// // rolls back), the index entries, the zone's and database's versions (`plan.lastVersion`),
/// // then the notifications of the commit's event (``commitEvent(of:)``).
/// return transaction.committed(plan, notifications: notifications)
/// ```
///
/// ``RecordStore/modifyRecords(_:zone:atomic:policy:caller:in:)`` makes one per transaction:
/// a large non-atomic batch commits in parts (``ModifyParts``).
public struct ModifyTransaction: Sendable {
    public let operations: [RecordOperation]
    /// The zone written to, by name.
    public let zone: String
    public let atomic: Bool
    public let policy: WritePolicy
    public let caller: Caller
    public let database: DatabaseKey
    /// The records to read before planning (the records operated on and the targets of
    /// their `VALIDATE` references); worked out before the engine takes its writer, for
    /// other writes wait while it holds it.
    public let names: [String]
    /// The upload receipts the operations' asset values carry (``AssetContext/receipts(for:)``).
    public let receipts: [String]
    /// The asset hashes the operations' asset values name (``AssetContext/namedHashes(for:)``).
    public let namedHashes: [String]
    private var planner: ModifyPlanner?

    public init(
        _ operations: [RecordOperation], zone: String, atomic: Bool, policy: WritePolicy, caller: Caller,
        in database: DatabaseKey
    ) {
        self.operations = operations
        self.zone = zone
        self.atomic = atomic
        self.policy = policy
        self.caller = caller
        self.database = database
        self.names = ModifyPlanner.prefetchNames(for: operations)
        self.receipts = AssetContext.receipts(for: operations)
        self.namedHashes = AssetContext.namedHashes(for: operations)
    }

    /// The zone as the modify's records name it.
    public var zoneID: ZoneID { ZoneID(zoneName: zone, ownerRecordName: database.owner) }

    /// Plans the operations over what the engine read with the writer held.
    ///
    /// - Parameters:
    ///   - zoneIsLive: whether the zone exists and is not deleted; when not, ZONE_NOT_FOUND.
    ///   - rows: the rows (live or tombstone) of ``names`` that exist.
    ///   - baseVersion: the database's version before this commit.
    ///   - assets: the uploads and assets ``receipts`` and ``namedHashes`` name.
    public mutating func plan(
        zoneIsLive: Bool, rows: [String: StoredRecord], baseVersion: Int64, assets: AssetContext
    ) throws(CloudKitError) -> ModifyPlan {
        guard zoneIsLive else { throw FeedRules.zoneNotFound(zone, in: database) }
        var planner = ModifyPlanner(
            zoneID: zoneID, policy: policy, caller: caller, rows: rows, baseVersion: baseVersion, assets: assets)
        let plan = planner.plan(operations, atomic: atomic)
        self.planner = planner
        return plan
    }

    /// The plan after deleting `children`: the live records whose `DELETE_SELF` references
    /// name one of the last plan's ``ModifyPlan/cascadingParents``.
    public mutating func cascade(children: [StoredRecord]) -> ModifyPlan {
        guard var planner else { preconditionFailure("cascade(children:) before plan(zoneIsLive:rows:baseVersion:assets:)") }
        let plan = planner.cascade(children: children)
        self.planner = planner
        return plan
    }

    /// Whether the plan writes anything; when not, the engine rolls back (and gives back any
    /// version it allocated) and answers ``unchanged(_:)``.
    public func writes(_ plan: ModifyPlan) -> Bool { !plan.changes.isEmpty }

    /// What the commit's subscriptions are matched against.
    public func commitEvent(of plan: ModifyPlan) -> CommitEvent { .records(zoneName: zone, changes: plan.changes) }

    /// The answer when nothing was written.
    public func unchanged(_ plan: ModifyPlan) -> ModifyOutcome { ModifyOutcome(results: plan.results, commit: nil) }

    /// The answer once everything the plan writes is written, `notifications` included.
    public func committed(_ plan: ModifyPlan, notifications: [StoredNotification]) -> ModifyOutcome {
        let summary = CommitSummary(
            database: database, zoneName: zone, version: plan.lastVersion, changes: plan.changes, caller: caller,
            notifications: notifications)
        return ModifyOutcome(results: plan.results, commit: summary)
    }
}

extension ModifyPlan {
    /// The records deleted by the last step whose `DELETE_SELF` children must be read and
    /// deleted next; `nil` when the cascade is over.
    public var cascadingParents: [String]? { deletedNames.isEmpty ? nil : deletedNames }
}
