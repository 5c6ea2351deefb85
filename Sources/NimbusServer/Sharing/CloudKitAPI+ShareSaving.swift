import NimbusProtocol
import NimbusStore

/// One operation of a `records/modify` request while the server prepares it.
struct PendingRecordOperation: Sendable {
    var type: RecordOperationType
    var record: Record
    var path: String
    var desiredKeys: Set<String>?
    var sharing: RecordSharingParts?
    /// The record's values sent without `type`, for the schema to type.
    var untyped: UntypedValues? = nil
    /// Added by the server (a root whose share is deleted): not answered to the client.
    var implied = false
    /// Users this operation takes out of a share (removed participants, or all of a deleted
    /// share's): their index entries and subscription copies go once it is saved.
    var endsParticipation: [String] = []
    var shareLocation: ShareLocation? = nil
}

extension CloudKitAPI {
    /// Turns the sharing parts of a modify request into the reserved fields the store keeps
    /// (``SystemFields``), and adds what a change implies: a share's state computed from its
    /// previous one, a share's root, and the root's `share` removed when its share is deleted.
    func applySharing(_ operations: inout [PendingRecordOperation], zone: ZoneID, in database: DatabaseKey) async throws {
        let hasSharing = operations.contains { op in
            guard let parts = op.sharing else { return false }
            return parts.isShare || parts.parent != .unchanged || parts.share != .unchanged
        }
        // Shares live in custom zones only: a delete in the default zone cannot end one.
        let hasDeletes = !zone.isDefault && operations.contains { $0.type.isDelete }
        guard hasSharing || hasDeletes else { return }

        var names: Set<String> = []
        for op in operations {
            guard let parts = op.sharing else { continue }
            if parts.isShare || (hasDeletes && op.type.isDelete) || parts.parent == .removed || parts.share == .removed {
                names.insert(op.record.recordName)
            }
            if case .set(let share) = parts.share { names.insert(share) }
        }
        let existing = try await records(named: names, zone: zone.zoneName, in: database)
        let sharesInRequest = Set(operations.filter { $0.sharing?.isShare == true && !$0.type.isDelete }.map(\.record.recordName))
        let deleted = Set(operations.filter(\.type.isDelete).map(\.record.recordName))

        var roots: [String: String] = [:]  // share name → root name, from this request
        for op in operations where !op.type.isDelete {
            if case .set(let share)? = op.sharing?.share { roots[share] = op.record.recordName }
        }

        var implied: [PendingRecordOperation] = []
        for index in operations.indices {
            var op = operations[index]
            guard let parts = op.sharing else { continue }
            let name = op.record.recordName
            if op.type.isDelete {
                // Deleting a share ends it: its root no longer names it.
                if let share = existing[name], share.recordType == SystemFields.shareType {
                    let fields = share.fields()
                    if let root = fields[SystemFields.root]?.referenceValue?.recordName, !deleted.contains(root) {
                        implied.append(try await rootWithoutShare(root, zone: zone, in: database))
                    }
                    let state = fields[SystemFields.shareState]?.stringValue.flatMap(ShareState.init(storedText:))
                    operations[index].endsParticipation = state?.participants.compactMap(\.userRecordName) ?? []
                    operations[index].shareLocation = ShareLocation(owner: database.owner, zone: zone.zoneName, share: name)
                }
                continue
            }
            if parts.isShare {
                guard !zone.isDefault else {
                    throw CloudKitError(
                        .badRequest, "share '\(name)' must be saved in a custom zone; the default zone cannot be shared",
                        recordName: name)
                }
                let previous = existing[name].flatMap { $0.recordType == SystemFields.shareType ? $0 : nil }
                let previousFields = previous?.fields() ?? [:]
                let previousState = previousFields[SystemFields.shareState]?.stringValue.flatMap(ShareState.init(storedText:))
                var root: String?
                if name == SystemFields.zoneShareName {
                    root = nil
                } else if let requested = roots[name] {
                    root = requested
                } else if let kept = previousFields[SystemFields.root]?.referenceValue?.recordName {
                    root = kept
                } else {
                    throw CloudKitError(
                        .badRequest,
                        "share '\(name)' needs its root record in the same request (the root's 'share' names it); "
                            + "to share the whole zone, name the share \(SystemFields.zoneShareName)",
                        recordName: name)
                }
                let state = ShareState.saved(
                    previous: previousState, owner: database.owner, publicPermission: parts.publicPermission,
                    invitations: parts.invitations, newID: shareIDs)
                let kept = state.currentUserRecordNames
                op.endsParticipation = (previousState?.currentUserRecordNames ?? []).filter { !kept.contains($0) }.sorted()
                op.shareLocation = ShareLocation(owner: database.owner, zone: zone.zoneName, share: name)
                if previousState == nil {
                    // Findable by its short GUID before it exists (an entry without a share grants nothing).
                    try await shareIndex.register(
                        shortGUID: state.shortGUID, ShareLocation(owner: database.owner, zone: zone.zoneName, share: name),
                        container: database.container, environment: database.environment)
                }
                op.record.fields.merge(parts.shareFields) { _, new in new }
                op.record.fields[SystemFields.shareState] = .string(state.storedText)
                if let root {
                    op.record.fields[SystemFields.root] = .reference(Reference(recordName: root, action: .deleteSelf))
                }
                if let previous {
                    // The state was computed from this version: a concurrent change (an
                    // acceptance) makes the save a conflict rather than lose it.
                    if op.type == .forceUpdate { op.type = .update }
                    if op.type == .forceReplace { op.type = .replace }
                    if op.type == .update || op.type == .replace, op.record.recordChangeTag == nil {
                        op.record.recordChangeTag = previous.changeTag
                    }
                }
            }
            if case .set(let parent) = parts.parent {
                guard parent != name else {
                    throw CloudKitError(.badRequest, "record '\(name)' cannot be its own parent", recordName: name)
                }
                op.record.fields[SystemFields.parent] = .reference(Reference(recordName: parent))
            }
            if case .set(let share) = parts.share {
                guard !zone.isDefault else {
                    throw CloudKitError(.badRequest, "records of the default zone cannot be shared", recordName: name)
                }
                let known =
                    sharesInRequest.contains(share)
                    || (existing[share].map {
                        $0.recordType == SystemFields.shareType
                            && $0.fields()[SystemFields.root]?.referenceValue?.recordName == name
                    } ?? false)
                guard known else {
                    throw CloudKitError(
                        .badRequest,
                        "record '\(name)' names share '\(share)', which is neither saved in this request nor rooted at it",
                        recordName: name)
                }
                op.record.fields[SystemFields.share] = .reference(Reference(recordName: share))
            }
            if (parts.parent == .removed || parts.share == .removed), op.type == .update || op.type == .forceUpdate,
                let current = existing[name], !current.deleted
            {
                // An update keeps the fields it does not name; removing one replaces the record.
                var fields = current.fields()
                fields.merge(op.record.fields) { _, new in new }
                if parts.parent == .removed { fields.removeValue(forKey: SystemFields.parent) }
                if parts.share == .removed { fields.removeValue(forKey: SystemFields.share) }
                op.record.fields = fields
                op.type = op.type == .update ? .replace : .forceReplace
            }
            operations[index] = op
        }
        operations.append(contentsOf: implied)
    }

    /// After a modify: forgets the participants its saved or deleted shares let go, and
    /// drops their subscription copies (best effort: the share record is the authority).
    func endParticipations(_ operations: [PendingRecordOperation], results: [RecordResult], _ identity: RequestIdentity) async {
        for (op, result) in zip(operations, results) where !op.endsParticipation.isEmpty {
            guard let location = op.shareLocation else { continue }
            if case .failed = result { continue }
            for user in op.endsParticipation {
                // Copies first: the sync finds the owner's database through the entry.
                try? await syncSharedSubscriptions(of: user, identity)
                await shareIndex.remove(participant: user, location, container: identity.container, environment: identity.environment)
            }
        }
    }

    /// A locked replace of `root` without its `share` (its share is being deleted).
    private func rootWithoutShare(_ root: String, zone: ZoneID, in database: DatabaseKey) async throws -> PendingRecordOperation {
        guard let current = try await store.lookupRecords([root], zone: zone.zoneName, in: database).first ?? nil else {
            throw CloudKitError(.notFound, "the root record '\(root)' of the share does not exist", recordName: root)
        }
        var record = current.record(zoneID: zone)
        record.fields.removeValue(forKey: SystemFields.share)
        return PendingRecordOperation(type: .replace, record: record, path: "", desiredKeys: nil, sharing: nil, implied: true)
    }

    /// Live records by name (missing ones left out).
    func records(named names: Set<String>, zone: String, in database: DatabaseKey) async throws -> [String: StoredRecord] {
        guard !names.isEmpty else { return [:] }
        let list = Array(names)
        let found = try await store.lookupRecords(list, zone: zone, in: database)
        var byName: [String: StoredRecord] = [:]
        for (name, record) in zip(list, found) { if let record { byName[name] = record } }
        return byName
    }
}
