import Foundation
import Nimbus
import NimbusProtocol
import NimbusTestSupport
import Testing

@testable import NimbusSync

/// The engine's decisions, without a database or a server: what each answer of the server
/// means for a record's server copy and pending change.
@Suite("Sync planner")
struct SyncPlannerTests {
    static let zone = "ReadingList"
    static let rules = MergeRules()

    /// A server record at change tag `tag`.
    func serverRecord(_ name: String, tag: String, _ fields: [String: FieldValue]) throws -> Nimbus.Record {
        let system = #"{"v":1,"recordName":"\#(name)","recordType":"Bookmark","zoneID":{"zoneName":"\#(Self.zone)"},"recordChangeTag":"\#(tag)"}"#
        var record = try Nimbus.Record(systemFieldsData: Data(system.utf8))
        for (key, value) in fields { record.setFieldValue(value, forKey: key) }
        return record
    }

    func copy(tag: String, _ fields: [String: FieldValue]) throws -> ServerCopy {
        ServerCopy(
            recordType: "Bookmark", fields: fields, tag: tag,
            system: try serverRecord("r", tag: tag, [:]).encodeSystemFields())
    }

    func pending(
        _ kind: PendingChange.Kind, _ fields: [String: FieldValue] = [:], changed: Set<String> = [], base: String? = nil,
        revision: Int64 = 1
    ) -> PendingChange {
        PendingChange(
            zoneName: Self.zone, recordName: "r", kind: kind, recordType: "Bookmark", fields: fields, changedKeys: changed,
            baseChangeTag: base, revision: revision)
    }

    // MARK: - An edit beats a stale delete (one rule, from the feed and from a send)

    @Test func aNewerEditBeatsAStaleDeleteWhetherTheFeedOrTheSendReportsIt() throws {
        let server = try serverRecord("r", tag: "t2", ["title": "edited elsewhere"])
        let state = LocalState(copy: try copy(tag: "t1", ["title": "old"]), pending: pending(.delete, base: "t1"))
        let fromFeed = SyncPlanner.feedModified(server, state: state, rules: Self.rules)
        var conflict = NimbusError(.serverRecordChanged, "changed")
        conflict.serverRecord = server
        let fromSend = SyncPlanner.deleteAnswered(.failure(conflict), sent: 1, state: state)

        let resolution = FieldResolution(
            field: "(record)", winner: .server, lostValue: "deleted", policy: "edit beats a stale delete")
        #expect(fromFeed.actions == [.putCopy(server, confirmed: true), .removeOutbox, .logConflict([resolution])])
        #expect(fromSend.actions == [.putCopy(server, confirmed: false), .removeOutbox, .logConflict([resolution])])
        #expect(fromFeed.visible == .saved(LocalRecord(server)))
        #expect(fromSend.visible == fromFeed.visible)
    }

    // MARK: - A save of a record the server no longer has is recreated with every field

    @Test func aPendingSaveOfARecordTheServerLostIsRecreatedWithEveryField() throws {
        let edit = pending(.save, ["title": "mine", "note": "kept"], changed: ["title"])
        let state = LocalState(copy: try copy(tag: "t1", ["title": "old", "note": "kept"]), pending: edit)
        let recreate = StoreAction.rewriteOutbox(fields: edit.fields, changedKeys: ["title", "note"])

        let deletedInFeed = SyncPlanner.goneFromServer(state: state)
        #expect(deletedInFeed.actions == [.removeCopy, recreate])
        #expect(deletedInFeed.visible == nil)  // the app still sees its edit

        let unknown = SyncPlanner.saveAnswered(
            .failure(NimbusError(.unknownItem, "gone")), sent: 1, state: state, rules: Self.rules)
        #expect(unknown.actions == [.removeCopy, recreate])
        #expect(unknown.send == .sendAgain(NimbusError(.unknownItem, "")))

        let zoneLost = SyncPlanner.zoneLost(state: state, policy: .recreateAndReupload)
        #expect(zoneLost.actions == [.removeCopy, recreate])
    }

    // MARK: - Sends

    @Test func aSavedChangeLeavesTheOutboxUnlessEditedWhileInFlight() throws {
        let saved = try serverRecord("r", tag: "t2", ["title": "sent"])
        let state = LocalState(copy: try copy(tag: "t1", ["title": "old"]), pending: pending(.save, ["title": "sent"], revision: 3))
        let done = SyncPlanner.saveAnswered(.success(saved), sent: 3, state: state, rules: Self.rules)
        #expect(done.actions == [.putCopy(saved, confirmed: false), .removeOutbox])
        #expect(done.send == .saved)

        var edited = state
        edited.pending = pending(.save, ["title": "sent", "note": "new"], revision: 4)
        let again = SyncPlanner.saveAnswered(.success(saved), sent: 3, state: edited, rules: Self.rules)
        #expect(again.actions == [
            .putCopy(saved, confirmed: false), .rewriteOutbox(fields: ["title": "sent", "note": "new"], changedKeys: ["note"]),
        ])

        var deleted = state
        deleted.pending = pending(.delete, base: "t1", revision: 4)
        let relocked = SyncPlanner.saveAnswered(.success(saved), sent: 3, state: deleted, rules: Self.rules)
        #expect(relocked.actions == [.putCopy(saved, confirmed: false), .lockDelete(toChangeTag: "t2")])
    }

    @Test func aConflictingSaveIsMergedAndSentAgainAndTheConflictLogged() throws {
        let server = try serverRecord("r", tag: "t2", ["title": "theirs", "note": "n"])
        var conflict = NimbusError(.serverRecordChanged, "changed")
        conflict.serverRecord = server
        let state = LocalState(
            copy: try copy(tag: "t1", ["title": "base", "note": "n"]),
            pending: pending(.save, ["title": "mine", "note": "n"], changed: ["title"]))
        let decision = SyncPlanner.saveAnswered(
            .failure(conflict), sent: 1, state: state, rules: MergeRules(defaultPolicy: .serverWins))
        #expect(decision.actions.first == .putCopy(server, confirmed: false))
        #expect(decision.actions.contains(.removeOutbox))  // the server's value won: nothing left to send
        #expect(decision.actions.contains { if case .logConflict = $0 { return true } else { return false } })
        #expect(decision.send == .sendAgain(conflict))
    }

    @Test func errorsOfAChangeAreRetriedReportedOrMeanTheZoneIsGone() {
        let state = LocalState(pending: pending(.save, ["title": "x"]))
        func outcome(_ code: NimbusError.Code) -> SendOutcome? {
            SyncPlanner.saveAnswered(.failure(NimbusError(code, "")), sent: 1, state: state, rules: Self.rules).send
        }
        #expect(outcome(.zoneBusy) == .retryLater(NimbusError(.zoneBusy, "")))
        #expect(outcome(.invalidArguments) == .failed(NimbusError(.invalidArguments, "")))
        // Refused for good: set aside as given up, not sent again; a server fault may pass.
        let refused = SyncPlanner.saveAnswered(
            .failure(NimbusError(.invalidArguments, "bad")), sent: 1, state: state, rules: Self.rules)
        #expect(refused.actions == [
            .quarantinePending(reason: .rejected, error: RecordedError(NimbusError(.invalidArguments, "bad"))), .removeOutbox,
        ])
        #expect(refused.visible == .deleted)
        let fault = SyncPlanner.saveAnswered(.failure(NimbusError(.internalError, "")), sent: 1, state: state, rules: Self.rules)
        #expect(fault.actions.isEmpty)
        #expect(fault.send == .failed(NimbusError(.internalError, "")))
        #expect(outcome(.zoneNotFound) == .zoneLost)
    }

    @Test func aDeleteOfARecordThatNeverReachedTheServerSendsNothing() throws {
        #expect(try SyncPlanner.outgoing(pending(.delete), copy: nil) == .nothing)
        let save = try SyncPlanner.outgoing(pending(.save, ["title": "new"]), copy: nil)
        guard case .save(let record) = save else { Issue.record("expected a save"); return }
        #expect(record.fieldDictionary == ["title": "new"])
    }

    // MARK: - Fetches and lost zones

    @Test func theDevicesOwnChangeComingBackIsOnlyConfirmed() throws {
        let echo = try serverRecord("r", tag: "t2", ["title": "mine"])
        let decision = SyncPlanner.feedModified(
            echo, state: LocalState(copy: try copy(tag: "t2", ["title": "mine"])), rules: Self.rules)
        #expect(decision == Decision(actions: [.confirmCopy]))
    }

    @Test func discardingALostZoneQuarantinesPendingChanges() throws {
        let state = LocalState(copy: try copy(tag: "t1", ["title": "old"]), pending: pending(.save, ["title": "mine"]))
        let decision = SyncPlanner.zoneLost(state: state, policy: .discardLocal)
        #expect(decision.actions == [.removeCopy, .quarantinePending(reason: .zoneDiscarded, error: nil), .removeOutbox])
        #expect(decision.visible == .deleted)

        let unsentDelete = SyncPlanner.zoneLost(state: LocalState(pending: pending(.delete)), policy: .discardLocal)
        #expect(unsentDelete.actions == [.quarantinePending(reason: .zoneDiscarded, error: nil), .removeOutbox])
        #expect(unsentDelete.visible == nil)  // already gone from the app's view

        let copyOnly = SyncPlanner.zoneLost(state: LocalState(copy: try copy(tag: "t1", ["title": "old"])), policy: .recreateAndReupload)
        #expect(copyOnly.actions == [.removeCopy, .enqueueSave(recordType: "Bookmark", fields: ["title": "old"])])
    }
}

/// A change the server refuses for permission (a read-only participant) is never sent again.
@Suite("Sync planner: permission")
struct SyncPlannerPermissionTests {
    static let readOnly = RecordedError(NimbusError(.permissionFailure, "read-only"))

    @Test func aRefusedSaveIsQuarantinedAndTheServerCopyShownAgain() throws {
        let planner = SyncPlannerTests()
        let copy = try planner.copy(tag: "t1", ["title": "Server"])
        let pending = planner.pending(.save, ["title": "Mine"], changed: ["title"])
        let decision = SyncPlanner.saveAnswered(
            .failure(NimbusError(.permissionFailure, "read-only")), sent: 1, state: LocalState(copy: copy, pending: pending),
            rules: MergeRules())
        #expect(decision.actions == [.quarantinePending(reason: .permissionDenied, error: Self.readOnly), .removeOutbox])
        #expect(decision.send == .failed(NimbusError(.permissionFailure, "read-only")))
        guard case .saved(let shown)? = decision.visible else {
            Issue.record("the server's copy is shown again")
            return
        }
        #expect(shown.fields["title"] == .string("Server"))
    }

    @Test func aRefusedCreationDisappears() {
        let pending = SyncPlannerTests().pending(.save, ["title": "Mine"], changed: ["title"])
        let decision = SyncPlanner.saveAnswered(
            .failure(NimbusError(.permissionFailure, "read-only")), sent: 1, state: LocalState(pending: pending),
            rules: MergeRules())
        #expect(decision.visible == .deleted)
        #expect(decision.actions == [.quarantinePending(reason: .permissionDenied, error: Self.readOnly), .removeOutbox])
    }

    @Test func aRefusedDeleteIsNotSentAgain() throws {
        let planner = SyncPlannerTests()
        let decision = SyncPlanner.deleteAnswered(
            .failure(NimbusError(.permissionFailure, "read-only")), sent: 1,
            state: LocalState(copy: try planner.copy(tag: "t1", ["title": "Server"]), pending: planner.pending(.delete, base: "t1")))
        #expect(decision.actions == [.quarantinePending(reason: .permissionDenied, error: Self.readOnly), .removeOutbox])
        #expect(decision.send == .failed(NimbusError(.permissionFailure, "read-only")))
    }
}
