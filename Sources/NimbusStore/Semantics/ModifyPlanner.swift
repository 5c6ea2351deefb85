import NimbusProtocol

/// The CloudKit semantics of `records/modify`, as a pure computation over the rows an
/// engine has read inside its transaction.
///
/// An engine:
/// 1. reads the rows named by ``prefetchNames(for:zone:)`` (live records and tombstones),
/// 2. calls ``plan(_:atomic:)``,
/// 3. while ``ModifyPlan/deletedNames`` gives parents, reads their `DELETE_SELF` children
///    and calls ``cascade(children:)``,
/// 4. writes ``ModifyPlan/writes`` and advances the database version to
///    ``ModifyPlan/lastVersion``, all in the same transaction.
///
/// Keeping this free of I/O means every engine shares one implementation and the rules are
/// tested without a database.
public struct ModifyPlanner: Sendable {
    public let zoneID: ZoneID
    public let policy: WritePolicy
    public let caller: Caller
    /// Current rows by record name, updated as operations apply.
    private var rows: [String: StoredRecord]
    private var nextVersion: Int64
    private let baseVersion: Int64
    private var plan = ModifyPlan()
    /// The uploads and assets the operations' asset values name.
    private let assets: AssetContext?

    /// - Parameters:
    ///   - rows: the current rows (live or tombstone) for every name ``prefetchNames(for:zone:)`` gave.
    ///   - baseVersion: the database version before this commit.
    ///   - assets: the uploads and assets named by the operations' asset values
    ///     (``AssetContext/receipts(for:)``, ``AssetContext/namedHashes(for:)``); `nil` refuses
    ///     every asset value.
    public init(
        zoneID: ZoneID, policy: WritePolicy, caller: Caller, rows: [String: StoredRecord], baseVersion: Int64,
        assets: AssetContext? = nil
    ) {
        self.assets = assets
        self.zoneID = zoneID
        self.policy = policy
        self.caller = caller
        self.rows = rows
        self.nextVersion = baseVersion + 1
        self.baseVersion = baseVersion
        self.plan.lastVersion = baseVersion
    }

    /// The record names whose rows the planner needs: the records operated on and the
    /// targets of their `VALIDATE` references.
    public static func prefetchNames(for operations: [RecordOperation]) -> [String] {
        var names = Set<String>()
        for operation in operations {
            names.insert(operation.record.recordName)
            for value in operation.record.fields.values {
                guard value.holdsReferences else { continue }
                for reference in value.references where reference.action == .validate {
                    names.insert(reference.recordName)
                }
            }
        }
        return Array(names)
    }

    /// Applies the operations in order.
    public mutating func plan(_ operations: [RecordOperation], atomic: Bool) -> ModifyPlan {
        var seen = Set<String>()
        for operation in operations {
            let name = operation.record.recordName
            guard seen.insert(name).inserted else {
                plan.results.append(
                    .failed(
                        CloudKitError(
                            .badRequest, "record '\(name)' appears more than once in this request", recordName: name)))
                continue
            }
            do throws(CloudKitError) {
                plan.results.append(try apply(operation))
            } catch {
                plan.results.append(.failed(error))
            }
        }
        let failed = plan.results.contains { if case .failed = $0 { return true } else { return false } }
        if atomic && failed {
            plan.results = zip(operations, plan.results).map { operation, result in
                if case .failed = result { return result }
                return .failed(
                    CloudKitError(
                        .atomicError, "the atomic request failed because another operation in it failed",
                        recordName: operation.record.recordName))
            }
            plan.changes = []
            plan.deletedNames = []
            plan.spentReceipts = []
            plan.lastVersion = baseVersion
            plan.failedAtomically = true
        }
        return plan
    }

    /// Tombstones the `DELETE_SELF` children of the records deleted so far; returns the plan
    /// with the children's names in ``ModifyPlan/deletedNames`` for the next round.
    public mutating func cascade(children: [StoredRecord]) -> ModifyPlan {
        plan.deletedNames = []
        for child in children where !child.deleted {
            if let current = rows[child.recordName], current.deleted { continue }
            let tombstone = makeTombstone(of: child)
            stage(before: child, after: tombstone)
            plan.deletedNames.append(child.recordName)
        }
        return plan
    }

    // MARK: - One operation

    private mutating func apply(_ operation: RecordOperation) throws(CloudKitError) -> RecordResult {
        let record = operation.record
        let name = record.recordName
        let existing = rows[name].flatMap { $0.deleted ? nil : $0 }

        if let access = policy.publicAccess {
            try checkAccess(operation, existing: existing, access)
        } else if policy.creatorOnlyWrites, let existing, !caller.isAdmin,
            existing.created.userRecordName != caller.userRecordName
        {
            throw CloudKitError(
                .accessDenied, "only the creator of record '\(name)' may change or delete it in the public database",
                recordName: name)
        }

        if operation.type.isDelete {
            guard let existing else {
                throw CloudKitError(.notFound, "record '\(name)' does not exist", recordName: name)
            }
            // A `delete` locks on the tag it carries; without one it deletes by record name,
            // as CloudKit does (docs/API.md: "Deleting without a change tag").
            if operation.type.isLocked, record.recordChangeTag?.isEmpty == false { try checkTag(record, against: existing) }
            let tombstone = makeTombstone(of: existing)
            stage(before: existing, after: tombstone)
            plan.deletedNames.append(name)
            return .deleted(recordName: name)
        }

        try validateReferences(of: record)

        let fieldsJSON: String
        let recordType: String
        switch (operation.type, existing) {
        case (.create, .some(let existing)):
            throw CloudKitError(
                .exists, "record '\(name)' already exists; merge with serverRecord and update it", recordName: name,
                serverRecord: existing.record(zoneID: zoneID))
        case (.update, nil), (.replace, nil):
            throw CloudKitError(
                .notFound, "record '\(name)' does not exist; use create (or forceUpdate) to create it",
                recordName: name)
        case (.update, .some(let existing)), (.forceUpdate, .some(let existing)):
            if operation.type.isLocked { try checkTag(record, against: existing) }
            try checkType(record, against: existing)
            var merged = existing.fields()
            merged.merge(record.fields.mapValues(\.storedForm)) { _, new in new }
            fieldsJSON = Record.fieldsJSONText(merged)
            recordType = existing.recordType
        case (.replace, .some(let existing)), (.forceReplace, .some(let existing)):
            if operation.type.isLocked { try checkTag(record, against: existing) }
            try checkType(record, against: existing)
            fieldsJSON = operation.fieldsJSON
            recordType = existing.recordType
        default:
            // create, or forceUpdate / forceReplace of a missing record: a new record.
            guard !record.recordType.isEmpty else {
                throw CloudKitError(.badRequest, "record '\(name)' needs a recordType to be created", recordName: name)
            }
            fieldsJSON = operation.fieldsJSON
            recordType = record.recordType
        }

        let claims = try checkAssets(of: record)
        plan.spentReceipts.append(contentsOf: claims)

        let version = takeVersion()
        let stamp = RecordStamp(timestamp: policy.now, userRecordName: caller.userRecordName, deviceID: caller.deviceID)
        let saved = StoredRecord(
            recordName: name, recordType: recordType, fieldsJSON: fieldsJSON,
            created: existing?.created ?? stamp, modified: stamp, version: version,
            // Over a tombstone, keep the name's first creation version: a reader whose token
            // predates it may hold the old incarnation and must see a later deletion.
            createdVersion: existing?.createdVersion ?? rows[name]?.createdVersion ?? version, deleted: false)
        stage(before: existing, after: saved)
        return .saved(saved)
    }

    /// The public database's grants: WRITE on the existing record's type (as its creator or
    /// not), CREATE on a new record's type. A delete of a missing record is NOT_FOUND later.
    private func checkAccess(
        _ operation: RecordOperation, existing: StoredRecord?, _ access: PublicAccess
    ) throws(CloudKitError) {
        let accessor: PublicAccess.Accessor = caller.isAdmin ? .admin : .user(caller.userRecordName)
        let name = operation.record.recordName
        if let existing {
            guard access.allows(.write, existing.recordType, creator: existing.created.userRecordName, accessor: accessor)
            else { throw access.denial(.write, existing.recordType, recordName: name, accessor: accessor) }
        } else if !operation.type.isDelete, !operation.record.recordType.isEmpty {
            guard access.allows(.create, operation.record.recordType, creator: nil, accessor: accessor) else {
                throw access.denial(.create, operation.record.recordType, recordName: name, accessor: accessor)
            }
        }
    }

    private func checkAssets(of record: Record) throws(CloudKitError) -> [String] {
        let hasAssets = record.fields.values.contains(where: \.holdsAssets)
        guard hasAssets else { return [] }
        guard let assets else {
            throw CloudKitError(
                .badRequest, "record '\(record.recordName)' holds assets, which this store does not keep",
                recordName: record.recordName)
        }
        return try assets.check(
            record, zone: zoneID.zoneName, caller: caller, now: policy.now, spent: Set(plan.spentReceipts))
    }

    private func checkTag(_ record: Record, against existing: StoredRecord) throws(CloudKitError) {
        guard let tag = record.recordChangeTag, !tag.isEmpty else {
            throw CloudKitError(
                .badRequest,
                "record '\(record.recordName)' needs its recordChangeTag for a locked save; "
                    + "use the force operation to write without one",
                recordName: record.recordName)
        }
        guard tag == existing.changeTag else {
            let serverRecord = existing.record(zoneID: zoneID)
            throw CloudKitError(
                .conflict,
                "record '\(record.recordName)' was changed on the server (change tag \(existing.changeTag), "
                    + "not \(tag)); merge with serverRecord and save again",
                recordName: record.recordName, serverRecord: serverRecord)
        }
    }

    private func checkType(_ record: Record, against existing: StoredRecord) throws(CloudKitError) {
        if !record.recordType.isEmpty && record.recordType != existing.recordType {
            throw CloudKitError(
                .badRequest,
                "record '\(record.recordName)' is of type \(existing.recordType); its type cannot change to \(record.recordType)",
                recordName: record.recordName)
        }
    }

    private func validateReferences(of record: Record) throws(CloudKitError) {
        for (field, value) in record.fields where value.holdsReferences {
            for reference in value.references {
                if let zone = reference.zoneID, zone.zoneName != zoneID.zoneName {
                    throw CloudKitError(
                        .badRequest,
                        "field '\(field)' of record '\(record.recordName)' references zone \(zone.zoneName); "
                            + "references must stay within the record's zone",
                        recordName: record.recordName)
                }
                guard reference.action == .validate else { continue }
                guard let target = rows[reference.recordName], !target.deleted else {
                    throw CloudKitError(
                        .validatingReferenceError,
                        "field '\(field)' of record '\(record.recordName)' references '\(reference.recordName)', "
                            + "which does not exist",
                        recordName: record.recordName)
                }
            }
        }
    }

    private mutating func makeTombstone(of existing: StoredRecord) -> StoredRecord {
        var tombstone = existing
        tombstone.deleted = true
        tombstone.fieldsJSON = StoredRecord.tombstoneFieldsJSON(of: existing)
        tombstone.version = takeVersion()
        tombstone.modified = RecordStamp(
            timestamp: policy.now, userRecordName: caller.userRecordName, deviceID: caller.deviceID)
        return tombstone
    }

    private mutating func takeVersion() -> Int64 {
        defer { nextVersion += 1 }
        plan.lastVersion = nextVersion
        return nextVersion
    }

    private mutating func stage(before: StoredRecord?, after: StoredRecord) {
        rows[after.recordName] = after
        plan.changes.append((before, after))
    }
}

/// What a modify request will write.
public struct ModifyPlan: Sendable {
    /// One result per operation, in request order.
    public var results: [RecordResult] = []
    /// Rows to write (live records and tombstones), in version order.
    public var writes: [StoredRecord] { changes.map(\.after) }
    /// Before and after of each write, for the commit summary.
    public var changes: [(before: StoredRecord?, after: StoredRecord)] = []
    /// Records deleted in the last step whose `DELETE_SELF` children must be cascaded.
    public var deletedNames: [String] = []
    /// The database version after this commit (the base version when nothing is written).
    public var lastVersion: Int64 = 0
    /// The request was atomic and failed: nothing is written.
    public var failedAtomically = false
    /// The upload receipts the saves spend: the engine marks them used in the same transaction.
    public var spentReceipts: [String] = []
}
