import Nimbus

/// What the engine tells the app. The app's model updates from these (or from the
/// ``LocalStore``), never from network callbacks.
public enum SyncEvent: Sendable {
    /// Remote changes were applied to the local store. Echoes of this device's own sends
    /// are not reported.
    case fetched(zone: String, saved: [LocalRecord], deleted: [String])
    /// Pending changes reached the server (or failed permanently).
    case sent(saved: [String], deleted: [String], failed: [SendFailure])
    /// Both sides changed a record; the merge decided.
    case conflictResolved(ConflictRecord)
    /// The signed-in account changed (or signed out); the old account's local data and
    /// pending changes were quarantined, not deleted.
    case accountChanged(from: String?, to: String?)
    /// A zone was missing on the server and was recreated (with this device's records
    /// queued for upload, per ``SyncConfiguration/ZoneLossPolicy``).
    case zoneRecreated(zone: String)
    /// Tokens and local copies were committed.
    case stateSaved

    public struct SendFailure: Sendable {
        public var zone: String
        public var recordName: String
        public var error: NimbusError
    }
}
