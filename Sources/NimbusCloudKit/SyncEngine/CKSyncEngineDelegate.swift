import Foundation

/// The app's side of a ``CKSyncEngine``: it applies what the engine fetched, persists the
/// engine's state, and hands over the records to send. The engine holds it weakly.
public protocol CKSyncEngineDelegate: AnyObject, Sendable {
    /// An event, delivered one at a time in CloudKit's order (see ``CKSyncEngine/Event``).
    func handleEvent(_ event: CKSyncEngine.Event, syncEngine: CKSyncEngine) async

    /// The next records to send; `nil` (or an empty batch) when there are none.
    func nextRecordZoneChangeBatch(
        _ context: CKSyncEngine.SendChangesContext, syncEngine: CKSyncEngine
    ) async -> CKSyncEngine.RecordZoneChangeBatch?

    /// The options of the fetch about to start, scheduled (``CKSyncEngine/SyncReason/scheduled``)
    /// or asked for by the app (``CKSyncEngine/SyncReason/manual``, with the options it gave):
    /// narrow its scope or put zones first. The context's options by default.
    func nextFetchChangesOptions(
        _ context: CKSyncEngine.FetchChangesContext, syncEngine: CKSyncEngine
    ) async -> CKSyncEngine.FetchChangesOptions
}

extension CKSyncEngineDelegate {
    public func nextFetchChangesOptions(
        _ context: CKSyncEngine.FetchChangesContext, syncEngine: CKSyncEngine
    ) async -> CKSyncEngine.FetchChangesOptions {
        context.options
    }
}
