import Foundation

extension CKSyncEngine {
    /// How an engine is set up.
    public struct Configuration: Sendable {
        /// The private or shared database to sync.
        public var database: CKDatabase
        /// The state the app persisted from the last ``Event/stateUpdate(_:)``; `nil` the
        /// first time.
        public var stateSerialization: State.Serialization?
        /// Receives the engine's events; held weakly.
        public var delegate: any CKSyncEngineDelegate
        /// Sync on its own: fetch at start and on every push of the engine's subscription,
        /// send soon after pending changes are added, retry after `retryAfter`. Off, the app
        /// calls ``CKSyncEngine/fetchChanges(_:)`` and ``CKSyncEngine/sendChanges(_:)``.
        public var automaticallySync: Bool = true
        /// The ID of the database subscription the engine saves to receive pushes.
        public var subscriptionID: CKSubscription.ID?

        public init(
            database: CKDatabase, stateSerialization: State.Serialization?, delegate: any CKSyncEngineDelegate
        ) {
            self.database = database
            self.stateSerialization = stateSerialization
            self.delegate = delegate
        }
    }
}
