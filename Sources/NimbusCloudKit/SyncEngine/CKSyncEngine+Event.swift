import Foundation

extension CKSyncEngine {
    /// What the engine tells its delegate, in CloudKit's order: a fetch is
    /// `willFetchChanges`, `fetchedDatabaseChanges` and `stateUpdate` per page, then per zone
    /// `willFetchRecordZoneChanges`, `fetchedRecordZoneChanges` and `stateUpdate` per page,
    /// `didFetchRecordZoneChanges`, and last `didFetchChanges`; a send is `willSendChanges`,
    /// `sentDatabaseChanges`, `sentRecordZoneChanges` and `stateUpdate` per batch, then
    /// `didSendChanges`. `accountChange` comes before the work it affects.
    public enum Event: Sendable, CustomStringConvertible {
        case stateUpdate(StateUpdate)
        case accountChange(AccountChange)
        case fetchedDatabaseChanges(FetchedDatabaseChanges)
        case fetchedRecordZoneChanges(FetchedRecordZoneChanges)
        case sentDatabaseChanges(SentDatabaseChanges)
        case sentRecordZoneChanges(SentRecordZoneChanges)
        case willFetchChanges(WillFetchChanges)
        case willFetchRecordZoneChanges(WillFetchRecordZoneChanges)
        case didFetchRecordZoneChanges(DidFetchRecordZoneChanges)
        case didFetchChanges(DidFetchChanges)
        case willSendChanges(WillSendChanges)
        case didSendChanges(DidSendChanges)

        public var description: String {
            switch self {
            case .stateUpdate: return "stateUpdate"
            case .accountChange(let change): return "accountChange(\(change.changeType))"
            case .fetchedDatabaseChanges(let event):
                return "fetchedDatabaseChanges(\(event.modifications.count) modified, \(event.deletions.count) deleted)"
            case .fetchedRecordZoneChanges(let event):
                return "fetchedRecordZoneChanges(\(event.modifications.count) modified, \(event.deletions.count) deleted)"
            case .sentDatabaseChanges(let event):
                return "sentDatabaseChanges(\(event.savedZones.count) saved, \(event.failedZoneSaves.count) failed)"
            case .sentRecordZoneChanges(let event):
                return "sentRecordZoneChanges(\(event.savedRecords.count) saved, \(event.failedRecordSaves.count) failed, "
                    + "\(event.deletedRecordIDs.count) deleted)"
            case .willFetchChanges: return "willFetchChanges"
            case .willFetchRecordZoneChanges(let event): return "willFetchRecordZoneChanges(\(event.zoneID.zoneName))"
            case .didFetchRecordZoneChanges(let event): return "didFetchRecordZoneChanges(\(event.zoneID.zoneName))"
            case .didFetchChanges: return "didFetchChanges"
            case .willSendChanges: return "willSendChanges"
            case .didSendChanges: return "didSendChanges"
            }
        }
    }
}

extension CKSyncEngine.Event {
    /// The engine's state changed: persist ``stateSerialization``.
    public struct StateUpdate: Sendable {
        public let stateSerialization: CKSyncEngine.State.Serialization
    }

    /// The user signed in, out, or another user signed in.
    public struct AccountChange: Sendable {
        public enum ChangeType: Sendable, CustomStringConvertible {
            case signIn(currentUser: CKRecord.ID)
            case signOut(previousUser: CKRecord.ID)
            case switchAccounts(previousUser: CKRecord.ID, currentUser: CKRecord.ID)

            public var description: String {
                switch self {
                case .signIn: return "signIn"
                case .signOut: return "signOut"
                case .switchAccounts: return "switchAccounts"
                }
            }
        }

        public let changeType: ChangeType
    }

    /// Zones that changed or were deleted on the server (each deletion with its
    /// `reason`: deleted, purged or encryptedDataReset).
    public struct FetchedDatabaseChanges: Sendable {
        public let modifications: [CKDatabase.DatabaseChange.Modification]
        public let deletions: [CKDatabase.DatabaseChange.Deletion]
    }

    /// Records that changed or were deleted on the server.
    public struct FetchedRecordZoneChanges: Sendable {
        public let modifications: [CKDatabase.RecordZoneChange.Modification]
        public let deletions: [CKDatabase.RecordZoneChange.Deletion]
    }

    /// The result of sending zone changes.
    public struct SentDatabaseChanges: Sendable {
        public struct FailedZoneSave: Sendable {
            public let zone: CKRecordZone
            public let error: CKError
        }

        public let savedZones: [CKRecordZone]
        public let failedZoneSaves: [FailedZoneSave]
        public let deletedZoneIDs: [CKRecordZone.ID]
        public let failedZoneDeletes: [CKRecordZone.ID: CKError]
    }

    /// The result of sending a batch of record changes.
    public struct SentRecordZoneChanges: Sendable {
        public struct FailedRecordSave: Sendable {
            public let record: CKRecord
            public let error: CKError
        }

        public let savedRecords: [CKRecord]
        public let failedRecordSaves: [FailedRecordSave]
        public let deletedRecordIDs: [CKRecord.ID]
        public let failedRecordDeletes: [CKRecord.ID: CKError]
    }

    public struct WillFetchChanges: Sendable {
        public let context: CKSyncEngine.FetchChangesContext
    }

    public struct WillFetchRecordZoneChanges: Sendable {
        public let zoneID: CKRecordZone.ID
    }

    public struct DidFetchRecordZoneChanges: Sendable {
        public let zoneID: CKRecordZone.ID
        /// Why the zone's fetch stopped, when it failed.
        public let error: CKError?
    }

    public struct DidFetchChanges: Sendable {
        public let context: CKSyncEngine.FetchChangesContext
    }

    public struct WillSendChanges: Sendable {
        public let context: CKSyncEngine.SendChangesContext
    }

    public struct DidSendChanges: Sendable {
        public let context: CKSyncEngine.SendChangesContext
    }
}
