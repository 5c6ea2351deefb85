import Foundation
import NimbusProtocol

extension CKSyncEngine {
    /// The records the delegate hands the engine to send next.
    public struct RecordZoneChangeBatch: Sendable {
        /// The most changes a batch built from pending changes holds (CloudKit's 400 items per
        /// operation, the server's limit per `records/modify`); the engine asks again for the rest.
        public static let maximumChanges = ProtocolLimits.maxRecordOperations

        public var recordsToSave: [CKRecord]
        public var recordIDsToDelete: [CKRecord.ID]
        /// Each zone's changes succeed or fail together.
        public var atomicByZone: Bool

        public init(recordsToSave: [CKRecord] = [], recordIDsToDelete: [CKRecord.ID] = [], atomicByZone: Bool = false) {
            self.recordsToSave = recordsToSave
            self.recordIDsToDelete = recordIDsToDelete
            self.atomicByZone = atomicByZone
        }

        /// A batch of the first pending changes (up to ``maximumChanges``), asking
        /// `recordProvider` for each record to save; a save whose record the provider does
        /// not return is left out. `nil` when there is nothing to send.
        public init?(
            pendingChanges: [PendingRecordZoneChange],
            recordProvider: (CKRecord.ID) async -> CKRecord?
        ) async {
            var saves: [CKRecord] = []
            var deletes: [CKRecord.ID] = []
            for change in pendingChanges {
                guard saves.count + deletes.count < Self.maximumChanges else { break }
                switch change {
                case .saveRecord(let id):
                    if let record = await recordProvider(id) { saves.append(record) }
                case .deleteRecord(let id):
                    deletes.append(id)
                }
            }
            guard !saves.isEmpty || !deletes.isEmpty else { return nil }
            self.init(recordsToSave: saves, recordIDsToDelete: deletes)
        }
    }
}
