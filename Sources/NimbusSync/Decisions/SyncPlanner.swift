import Foundation
import Nimbus
import NimbusProtocol

/// What the server's answers mean for one record on this device, as a pure computation over
/// the record's ``LocalState`` read inside the transaction that will apply the result.
///
/// The engine:
/// 1. reads the record's state (its server copy and its pending change),
/// 2. asks the planner what the server's answer means (``Decision``),
/// 3. applies the decision's ``StoreAction``s in the same transaction and reports its
///    outcome as events.
///
/// Keeping this free of I/O means each rule is written once (an edit beats a stale delete;
/// a pending save of a record the server no longer has is recreated with all its fields)
/// and tested without a database or a server.
enum SyncPlanner {
    // MARK: - Sending

    /// What to send for a pending change, built on the server copy it is based on.
    static func outgoing(_ change: PendingChange, copy: ServerCopy?) throws -> Outgoing {
        let id = Nimbus.Record.ID(recordName: change.recordName, zoneID: ZoneID(localZoneName: change.zoneName))
        switch change.kind {
        case .delete:
            // Locked to the version the user deleted; a delete of a record that never reached
            // the server has nothing to send.
            guard copy != nil, let base = change.baseChangeTag else { return .nothing }
            return .delete(id, changeTag: base)
        case .save:
            guard let copy else {
                var record = Nimbus.Record(recordType: change.recordType, recordID: id)
                for (key, value) in change.fields { record.setFieldValue(value, forKey: key) }
                record.parent = change.parent.map { Reference(recordName: $0) }
                return .save(record)
            }
            // Only the changed keys are sent, checked against the copy's change tag.
            var record = try Nimbus.Record(systemFieldsData: copy.system)
            for (key, value) in copy.fields { record.setFieldValue(value, forKey: key) }
            record.clearChangedKeys()
            for key in change.changedKeys { record.setFieldValue(change.fields[key], forKey: key) }
            // A save without a parent keeps the server's (apps that never heard of parents
            // must not take records out of a shared hierarchy by editing them).
            if let parent = change.parent, record.parent?.recordName != parent { record.parent = Reference(recordName: parent) }
            return .save(record)
        }
    }

    /// The server answered a save that sent revision `sent` of the record's pending change
    /// (`carriedReceipts`: with asset uploads' receipts, which a save spends).
    static func saveAnswered(
        _ answer: Result<Nimbus.Record, NimbusError>, sent: Int64, state: LocalState, rules: MergeRules,
        carriedReceipts: Bool = false
    ) -> Decision {
        if carriedReceipts {
            var decision = saveAnswered(answer, sent: sent, state: state, rules: rules)
            switch answer {
            case .success:
                // Spent: a later save of new files asks for new uploads.
                decision.actions.append(.forgetUploads)
            case .failure(let error) where error.code == .invalidArguments:
                // A receipt refused (expired, or already used): upload the files again.
                decision = Decision(actions: [.forgetUploads], send: .sendAgain(error))
            case .failure:
                break
            }
            return decision
        }
        switch answer {
        case .success(let saved):
            var decision = Decision(actions: [.putCopy(saved, confirmed: false)], send: .saved)
            switch state.pending {
            case let pending? where pending.revision == sent:
                decision.actions.append(.removeOutbox)
            case let pending? where pending.kind == .save:
                // Edited again while in flight: what remains to send is measured from the new copy.
                let changed = changedKeys(pending.fields, from: saved.fieldDictionary)
                decision.actions.append(
                    changed.isEmpty ? .removeOutbox : .rewriteOutbox(fields: pending.fields, changedKeys: changed))
            case _?:
                // Deleted while in flight: the delete now stands on the version just saved.
                decision.actions.append(.lockDelete(toChangeTag: saved.recordChangeTag))
            case nil:
                break
            }
            return decision
        case .failure(let error):
            switch error.code {
            case .serverRecordChanged where error.serverRecord != nil:
                let server = error.serverRecord!
                guard let pending = state.pending else { return Decision(actions: [.putCopy(server, confirmed: false)]) }
                guard pending.kind == .save else {
                    // Deleted while in flight: the delete is judged against the newer version.
                    return Decision(actions: [.putCopy(server, confirmed: false)], send: .sendAgain(error))
                }
                var decision = rebase(pending, onto: server, ancestor: state.copy, rules: rules, confirmed: false)
                decision.send = .sendAgain(error)
                return decision
            case .permissionFailure:
                return permissionDenied(error, state: state)
            case .unknownItem:
                // Gone from the server: send it again as a new record.
                var decision = Decision(actions: [.removeCopy], send: .sendAgain(error))
                if let pending = state.pending, pending.kind == .save { decision.actions.append(recreate(pending)) }
                return decision
            default:
                return failed(error, state: state)
            }
        }
    }

    /// The server answered a delete that sent revision `sent` of the record's pending change.
    static func deleteAnswered(_ answer: Result<Void, NimbusError>, sent: Int64, state: LocalState) -> Decision {
        let error: NimbusError
        switch answer {
        case .success: return deleted(sent: sent, state: state)
        case .failure(let failure): error = failure
        }
        switch error.code {
        case .unknownItem:
            // Already gone: the delete is done.
            return deleted(sent: sent, state: state)
        case .permissionFailure:
            return permissionDenied(error, state: state)
        case .serverRecordChanged where error.serverRecord != nil:
            let server = error.serverRecord!
            guard let pending = state.pending, pending.revision == sent else {
                // Saved again after the delete was sent: that save goes on, on the newer copy.
                return Decision(actions: [.putCopy(server, confirmed: false)], send: .sendAgain(error))
            }
            return editBeatsStaleDelete(server, confirmed: false)
        default:
            return failed(error, state: state)
        }
    }

    private static func deleted(sent: Int64, state: LocalState) -> Decision {
        var decision = Decision(actions: [.removeCopy], send: .deleted)
        if let pending = state.pending {
            // Saved again after the delete was sent: it is created anew.
            decision.actions.append(pending.revision == sent ? .removeOutbox : recreate(pending))
        }
        return decision
    }

    /// The user may not make this change (a read-only participant of a share, or a share
    /// that ended): sending it again can never succeed. The change goes to the quarantine
    /// (kept, not sent), and the app sees the server's copy again, or the record vanish when
    /// the server never had it.
    static func permissionDenied(_ error: NimbusError, state: LocalState) -> Decision {
        setAside(error, reason: .permissionDenied, state: state)
    }

    /// A change answered with an error of its own that is not retried: given up when sending
    /// it again as it is can never succeed (``givesUp(_:)``), kept in the outbox otherwise.
    static func failed(_ error: NimbusError, state: LocalState) -> Decision {
        givesUp(error) ? setAside(error, reason: .rejected, state: state) : Decision(send: failure(error))
    }

    /// Whether the server refused a change for good: not retryable, and not an error that
    /// may pass without the change being edited (a lost zone, credentials, a server fault).
    static func givesUp(_ error: NimbusError) -> Bool {
        let passing: Set<NimbusError.Code> = [
            .zoneNotFound, .notAuthenticated, .operationCancelled, .internalError, .serverRejectedRequest,
        ]
        return !error.isRetryable && !passing.contains(error.code)
    }

    /// Sets the pending change aside (the quarantine, as given up for `reason`), and shows
    /// the app the server's copy again, or the record vanish when the server never had it.
    static func setAside(_ error: NimbusError, reason: GivenUpChange.Reason, state: LocalState) -> Decision {
        var decision = Decision(send: .failed(error))
        if state.pending != nil {
            decision.actions = [.quarantinePending(reason: reason, error: RecordedError(error)), .removeOutbox]
        }
        if let copy = state.copy, let record = try? Nimbus.Record(systemFieldsData: copy.system) {
            decision.visible = .saved(LocalRecord(record, fields: copy.fields))
        } else {
            decision.visible = .deleted
        }
        return decision
    }

    private static func failure(_ error: NimbusError) -> SendOutcome {
        if error.code == .zoneNotFound { return .zoneLost }
        return error.isRetryable ? .retryLater(error) : .failed(error)
    }

    // MARK: - Fetching

    /// The zone's change feed has `record`.
    static func feedModified(_ record: Nimbus.Record, state: LocalState, rules: MergeRules) -> Decision {
        if let copy = state.copy, copy.tag == record.recordChangeTag {
            // This device's own change coming back: not a remote edit.
            return Decision(actions: [.confirmCopy])
        }
        switch state.pending {
        case let pending? where pending.kind == .save:
            return rebase(pending, onto: record, ancestor: state.copy, rules: rules, confirmed: true)
        case _?:
            // Changed on the server after the version the user deleted (or created elsewhere
            // under the same name): the newer edit wins.
            return editBeatsStaleDelete(record, confirmed: true)
        case nil:
            return Decision(actions: [.putCopy(record, confirmed: true)], visible: .saved(LocalRecord(record)))
        }
    }

    /// The record is gone from the server: the feed has its deletion, or a complete read of
    /// the zone did not return it.
    static func goneFromServer(state: LocalState) -> Decision {
        var decision = Decision()
        if state.copy != nil { decision.actions.append(.removeCopy) }
        switch state.pending {
        case let pending? where pending.kind == .save:
            // Deleted on the server while edited here: the edit wins and creates it again.
            decision.actions.append(recreate(pending))
            return decision
        case _?:
            decision.actions.append(.removeOutbox)
        case nil:
            break
        }
        if state.copy != nil { decision.visible = .deleted }
        return decision
    }

    /// The zone is gone from the server (deleted, or the server was wiped).
    static func zoneLost(
        state: LocalState, policy: SyncConfiguration.ZoneLossPolicy, reason: GivenUpChange.Reason = .zoneDiscarded
    ) -> Decision {
        var decision = Decision()
        if state.copy != nil { decision.actions.append(.removeCopy) }
        switch policy {
        case .recreateAndReupload:
            switch state.pending {
            case let pending? where pending.kind == .save:
                decision.actions.append(recreate(pending))
            case _?:
                // A delete of a record the server no longer has is moot.
                decision.actions.append(.removeOutbox)
            case nil:
                if let copy = state.copy {
                    decision.actions.append(.enqueueSave(recordType: copy.recordType, fields: copy.fields))
                }
            }
        case .discardLocal:
            if state.pending != nil { decision.actions += [.quarantinePending(reason: reason, error: nil), .removeOutbox] }
            let wasVisible = state.pending.map { $0.kind == .save } ?? (state.copy != nil)
            if wasVisible { decision.visible = .deleted }
        }
        return decision
    }

    // MARK: - The shared rules

    /// A pending save meets a newer server version: three-way merge (the ancestor is the
    /// previous server copy), keep the server's record as the copy, and leave in the outbox
    /// only what still differs from it.
    static func rebase(
        _ pending: PendingChange, onto server: Nimbus.Record, ancestor: ServerCopy?, rules: MergeRules, confirmed: Bool
    ) -> Decision {
        let serverFields = server.fieldDictionary
        let (merged, resolutions) = ThreeWayMerge.merge(
            ancestor: ancestor?.fields ?? [:], local: pending.fields, server: serverFields, rules: rules)
        let changed = changedKeys(merged, from: serverFields)
        var decision = Decision(actions: [.putCopy(server, confirmed: confirmed)])
        decision.actions.append(changed.isEmpty ? .removeOutbox : .rewriteOutbox(fields: merged, changedKeys: changed))
        if !resolutions.isEmpty { decision.actions.append(.logConflict(resolutions)) }
        decision.visible = .saved(LocalRecord(server, fields: merged, isPending: !changed.isEmpty))
        return decision
    }

    /// A delete of a version older than the server's: the newer edit wins, the delete is
    /// dropped and the conflict logged.
    static func editBeatsStaleDelete(_ server: Nimbus.Record, confirmed: Bool) -> Decision {
        let resolution = FieldResolution(
            field: "(record)", winner: .server, lostValue: "deleted", policy: "edit beats a stale delete")
        return Decision(
            actions: [.putCopy(server, confirmed: confirmed), .removeOutbox, .logConflict([resolution])],
            visible: .saved(LocalRecord(server)))
    }

    /// A pending save of a record the server no longer has: it is created again, every field sent.
    static func recreate(_ pending: PendingChange) -> StoreAction {
        .rewriteOutbox(fields: pending.fields, changedKeys: Set(pending.fields.keys))
    }

    /// The keys whose values differ between `fields` and `base`.
    static func changedKeys(_ fields: [String: FieldValue], from base: [String: FieldValue]) -> Set<String> {
        Set(fields.keys).union(base.keys).filter { key in
            fields[key].map { !$0.sameData(as: base[key]) } ?? (base[key] != nil)
        }
    }
}

extension LocalRecord {
    /// The device's view of a server record (`fields`, when given, are a merge's result).
    init(_ record: Nimbus.Record, fields: [String: FieldValue]? = nil, isPending: Bool = false) {
        self.init(
            zoneName: record.id.zoneID.localZoneName, recordName: record.id.recordName, recordType: record.recordType,
            fields: fields ?? record.fieldDictionary, serverChangeTag: record.recordChangeTag, isPending: isPending,
            parent: record.parent?.recordName)
    }
}
