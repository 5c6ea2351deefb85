import Foundation

extension CKSyncEngine {
    /// Why the engine syncs.
    public enum SyncReason: Sendable, Hashable {
        /// On its own (automatic sync: a push, a pending change, a retry).
        case scheduled
        /// Because the app called ``CKSyncEngine/fetchChanges(_:)`` or ``CKSyncEngine/sendChanges(_:)``.
        case manual
    }

    /// Which changes a fetch gets.
    public struct FetchChangesOptions: Sendable {
        public enum Scope: Sendable, Hashable {
            case all
            case zoneIDs([CKRecordZone.ID])
            case allExcluding([CKRecordZone.ID])

            public func contains(_ zoneID: CKRecordZone.ID) -> Bool {
                switch self {
                case .all: return true
                case .zoneIDs(let ids): return ids.contains(zoneID)
                case .allExcluding(let ids): return !ids.contains(zoneID)
                }
            }
        }

        public var scope: Scope
        public var operationGroup: CKOperationGroup
        /// Zones fetched before the others.
        public var prioritizedZoneIDs: [CKRecordZone.ID] = []

        public init(scope: Scope = .all) {
            self.scope = scope
            self.operationGroup = CKOperationGroup()
        }
    }

    /// Which changes a send sends.
    public struct SendChangesOptions: Sendable {
        public enum Scope: Sendable, Hashable {
            case all
            case zoneIDs([CKRecordZone.ID])
            case allExcluding([CKRecordZone.ID])
            case recordIDs([CKRecord.ID])

            public func contains(_ zoneID: CKRecordZone.ID) -> Bool {
                switch self {
                case .all: return true
                case .zoneIDs(let ids): return ids.contains(zoneID)
                case .allExcluding(let ids): return !ids.contains(zoneID)
                case .recordIDs(let ids): return ids.contains { $0.zoneID == zoneID }
                }
            }

            public func contains(_ recordID: CKRecord.ID) -> Bool {
                switch self {
                case .recordIDs(let ids): return ids.contains(recordID)
                default: return contains(recordID.zoneID)
                }
            }

            public func contains(_ change: PendingRecordZoneChange) -> Bool { contains(change.recordID) }

            public func contains(_ change: PendingDatabaseChange) -> Bool { contains(change.zoneID) }
        }

        public var scope: Scope
        public var operationGroup: CKOperationGroup

        public init(scope: Scope = .all) {
            self.scope = scope
            self.operationGroup = CKOperationGroup()
        }
    }

    /// Why and what the engine is fetching.
    public struct FetchChangesContext: Sendable {
        public let reason: SyncReason
        public let options: FetchChangesOptions
    }

    /// Why and what the engine is sending.
    public struct SendChangesContext: Sendable {
        public let reason: SyncReason
        public let options: SendChangesOptions
    }
}
