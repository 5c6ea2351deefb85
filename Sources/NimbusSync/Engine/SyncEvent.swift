import Nimbus
import NimbusProtocol

/// What the engine tells the app. The app's model updates from these (or from the
/// ``LocalStore``), never from network callbacks.
public enum SyncEvent: Sendable {
    /// Remote changes were applied to the local store. Echoes of this device's own sends
    /// are not reported.
    case fetched(zone: String, saved: [LocalRecord], deleted: [String])
    /// Pending changes reached the server, or failed: a change the server refused for good
    /// is also reported as ``gaveUp(_:)`` and set aside; one that failed with an error that
    /// may pass stays in the outbox for the next send, its attempts and last error in
    /// ``SyncDiagnostics``; so does a change the server kept answering with a newer version,
    /// reported as failed with ``NimbusError/Code/serverRecordChanged`` after
    /// ``SyncConfiguration/retryPolicy``'s attempts.
    case sent(saved: [String], deleted: [String], failed: [SendFailure])
    /// Both sides changed a record; the merge decided.
    case conflictResolved(ConflictRecord)
    /// The signed-in account changed (or signed out); the old account's local data and
    /// pending changes were quarantined, not deleted.
    case accountChanged(from: String?, to: String?)
    /// The ``Account`` the engine follows (``SyncEngine/follow(_:makeService:)``) has a
    /// signed-in user, whom the engine now syncs as (after ``accountChanged(from:to:)`` when
    /// it is another user than the local data's).
    case signedIn(account: String)
    /// The ``Account`` the engine follows (``SyncEngine/follow(_:makeService:)``) signed out:
    /// fetches and sends stop; the local data (of `account`) and the outbox stay as they
    /// are, unsent, until someone signs in.
    case signedOut(account: String?)
    /// A zone of the engine was deleted on the server, and why (CKSyncEngine's deletion
    /// reasons): reported before the engine handles the loss (``zoneRecreated(zone:)``).
    case zoneDeleted(zone: String, reason: ZoneDeletionReason)
    /// A zone was missing on the server and was recreated (with this device's records
    /// queued for upload, per ``SyncConfiguration/ZoneLossPolicy``).
    case zoneRecreated(zone: String)
    /// Another user's zone became readable in the shared database (a share of it was
    /// accepted, on this device or another of the user's) and its records were fetched.
    /// Its records are named with ``ZoneID/localZoneName``.
    case shareAccepted(zoneID: ZoneID)
    /// A shared zone is no longer readable: its owner deleted the share or removed the user,
    /// or the user left it. Its records were removed from the device (pending changes to
    /// them went to the quarantine), after a ``fetched(zone:saved:deleted:)`` naming them.
    case shareRevoked(zoneID: ZoneID)
    /// A share record was fetched new or changed: created by its owner, a participant
    /// invited, accepted or removed, a permission changed. For the owner, it comes from the
    /// private zone it shares; for a participant, from the shared zone.
    case shareChanged(Share)
    /// A page of a zone's changes was committed to the local store: how far the fetch of
    /// that zone got (records and bytes so far, whether more pages follow).
    case fetchProgress(FetchProgress)
    /// Tokens and local copies were committed.
    case stateSaved
    /// A fetch nobody awaits failed: one a push triggered (``SyncEngine/listen(to:)``).
    /// Fetches the app awaits throw instead. The next push or fetch tries again.
    case fetchFailed(any Error)
    /// A send nobody awaits failed: the upload after a lost zone was recreated. The changes
    /// stay in the outbox for the next ``SyncEngine/sendChanges()``.
    case sendFailed(any Error)
    /// An asset file's bytes moved: an upload before its record's save, or a download into
    /// the cache.
    case assetProgress(AssetTransfer)
    /// The engine stopped sending these changes and set them aside, each with its reason
    /// and the server's error (a change the server refused for good, one the user may not
    /// make, a lost zone let go, a share that ended, an account switch). They are kept:
    /// list them with ``LocalStore/givenUp()``, put them back with
    /// ``SyncEngine/retry(givenUp:)`` or let them go with ``LocalStore/discardGivenUp(_:)``.
    case gaveUp([GivenUpChange])
    /// The push channel of ``SyncEngine/listen(to:)-(PushClient)`` connected or dropped
    /// (its state as ``SyncDiagnostics/push`` reports it).
    case pushConnectionChanged(SyncDiagnostics.PushConnection)

    /// How far one asset file's upload or download got.
    public struct AssetTransfer: Sendable, Hashable {
        public enum Direction: Sendable, Hashable { case upload, download }
        public var direction: Direction
        public var zone: String
        public var recordName: String
        public var field: String
        public var progress: TransferProgress
    }

    public struct SendFailure: Sendable {
        public var zone: String
        public var recordName: String
        public var error: NimbusError
    }
}

/// Why a zone was deleted on the server (CKSyncEngine's
/// `Event.FetchedDatabaseChanges.Deletion.Reason`).
public enum ZoneDeletionReason: String, Sendable, Hashable {
    /// Deleted by the user or an app.
    case deleted
    /// Deleted with its change history (the user removed the app's data).
    case purged
    /// The user reset their encrypted data (``EncryptionKeys/resetEncryptedData(in:)``):
    /// nobody can read what the zone held; upload the device's copies again.
    case encryptedDataReset
}
