import Foundation
import Nimbus
import NimbusProtocol

/// What the device holds for one record: the server's last copy and the pending change.
struct LocalState: Sendable, Equatable {
    var copy: ServerCopy?
    var pending: PendingChange?
}

/// The server's last copy of a record as the device keeps it.
struct ServerCopy: Sendable, Equatable {
    var recordType: String
    var fields: [String: FieldValue]
    var tag: String
    /// The record's system fields (``Nimbus/Record/encodeSystemFields()``), to save an edit
    /// locked to this version.
    var system: Data
}

/// What to send for one pending change.
enum Outgoing: Equatable {
    case save(Nimbus.Record)
    case delete(Nimbus.Record.ID, changeTag: String)
    /// Nothing: a delete of a record that never reached the server.
    case nothing
}

/// One change of the local store a ``Decision`` asks for, applied to the record it concerns
/// in the transaction that read its ``LocalState``, in order.
enum StoreAction: Equatable {
    /// Keep `record` as the server's copy; `confirmed` when it came from the zone's change
    /// feed (a copy learned from a send must come back in the feed, or it is gone).
    case putCopy(Nimbus.Record, confirmed: Bool)
    /// The copy came back in the feed.
    case confirmCopy
    case removeCopy
    case removeOutbox
    /// Rewrites the pending save, keeping its revision (so a send in flight still clears it).
    case rewriteOutbox(fields: [String: FieldValue], changedKeys: Set<String>)
    /// Locks the pending delete to another version of the record.
    case lockDelete(toChangeTag: String?)
    /// Queues a save of every field (a lost zone's record, uploaded again).
    case enqueueSave(recordType: String, fields: [String: FieldValue])
    /// Moves the pending change to the quarantine of the signed-in account, as given up for
    /// `reason` (``GivenUpChange``).
    case quarantinePending(reason: GivenUpChange.Reason, error: RecordedError?)
    case logConflict([FieldResolution])
    /// Forgets the record's asset uploads (their receipts were spent or refused).
    case forgetUploads
}

/// What an answer of the server means for one record.
struct Decision: Equatable {
    var actions: [StoreAction] = []
    /// How the app's view of the record changed, when it should hear of it.
    var visible: Visible?
    /// What became of a sent change.
    var send: SendOutcome?

    enum Visible: Equatable {
        case saved(LocalRecord)
        case deleted
    }
}

/// What became of one sent change.
enum SendOutcome: Equatable {
    case saved
    case deleted
    /// Rebased on a newer version, or to be created anew: still pending, to send again.
    case sendAgain(NimbusError)
    /// Failed for now; send again after a wait.
    case retryLater(NimbusError)
    /// Failed for good: reported; given up (``GivenUpChange``) unless the error may pass
    /// (then it stays in the outbox).
    case failed(NimbusError)
    /// The zone is gone from the server.
    case zoneLost
}

extension SendOutcome {
    /// Errors compare by code (``NimbusError`` is not `Equatable`).
    static func == (lhs: SendOutcome, rhs: SendOutcome) -> Bool {
        switch (lhs, rhs) {
        case (.saved, .saved), (.deleted, .deleted), (.zoneLost, .zoneLost): return true
        case (.sendAgain(let l), .sendAgain(let r)), (.retryLater(let l), .retryLater(let r)), (.failed(let l), .failed(let r)):
            return l.code == r.code
        default: return false
        }
    }
}
