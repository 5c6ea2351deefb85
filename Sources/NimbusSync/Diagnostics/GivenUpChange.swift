import Foundation

/// A pending change the engine stopped sending, kept with why: the server refused it for
/// good, the zone or share it belonged to is gone, or the account changed. Nothing the user
/// made is dropped: it waits in the local store until the app retries or discards it.
///
/// ```swift
/// for await event in engine.events() {
///     if case .gaveUp(let changes) = event {
///         for change in changes { log("\(change.change.recordName): \(change.reason) \(change.error?.description ?? "")") }
///     }
/// }
/// for change in try engine.store.givenUp() where change.reason == .rejected {
///     // fix the record, or:
///     try await engine.retry(givenUp: [change.id])     // back into the outbox, then sent
/// }
/// try engine.store.discardGivenUp([change.id])         // or let it go for good
/// ```
public struct GivenUpChange: Sendable, Hashable, Identifiable {
    /// Why the engine stopped sending a change.
    public enum Reason: String, Sendable, Codable, Hashable, CaseIterable {
        /// The server refused the change for good (invalid fields, a broken reference, the
        /// quota used up…): sending it again as it is cannot succeed. ``GivenUpChange/error``
        /// says why.
        case rejected
        /// The user may not make this change (`permissionFailure`: a read-only participant
        /// of a share).
        case permissionDenied
        /// Its zone was lost on the server and ``SyncConfiguration/ZoneLossPolicy/discardLocal``
        /// let the zone go.
        case zoneDiscarded
        /// Its zone was shared with the user and the share ended (removed, or left).
        case shareRevoked
        /// It belonged to another account than the one signed in now (an account switch or
        /// ``SyncEngine/signOut()``): only that account can send it.
        case accountChanged
        /// Kept before the store recorded reasons (a store older than the diagnostics).
        case unrecorded
    }

    /// The change's identifier in the local store (for ``SyncEngine/retry(givenUp:)`` and
    /// ``LocalStore/discardGivenUp(_:)``).
    public var id: Int64
    /// The user the change was made by (the local data's account at the time).
    public var account: String
    /// The change as it was in the outbox.
    public var change: PendingChange
    public var reason: Reason
    /// The server's answer that made the engine give up, when one did.
    public var error: RecordedError?
    public var givenUpAt: Date
    /// How many times the change had been sent.
    public var attempts: Int

    /// The entry without its fields, as ``SyncDiagnostics`` lists it.
    public var summary: SyncDiagnostics.GivenUp {
        SyncDiagnostics.GivenUp(
            id: id, account: account, zoneName: change.zoneName, recordName: change.recordName, kind: change.kind,
            recordType: change.recordType, reason: reason, error: error, givenUpAt: givenUpAt, attempts: attempts)
    }
}
