import Foundation

extension CKSyncEngine {
    /// A record change the app wants sent.
    public enum PendingRecordZoneChange: Hashable, Sendable {
        case saveRecord(CKRecord.ID)
        case deleteRecord(CKRecord.ID)

        var recordID: CKRecord.ID {
            switch self {
            case .saveRecord(let id), .deleteRecord(let id): return id
            }
        }
    }

    /// A zone change the app wants sent.
    public enum PendingDatabaseChange: Hashable, Sendable {
        case saveZone(CKRecordZone)
        case deleteZone(CKRecordZone.ID)

        var zoneID: CKRecordZone.ID {
            switch self {
            case .saveZone(let zone): return zone.zoneID
            case .deleteZone(let id): return id
            }
        }
    }
}

/// The persisted form of IDs and pending changes (inside ``CKSyncEngine/State/Serialization``).
struct StoredZoneID: Codable, Hashable, Sendable {
    var zoneName: String
    var ownerName: String

    init(_ id: CKRecordZone.ID) {
        zoneName = id.zoneName
        ownerName = id.ownerName
    }

    var id: CKRecordZone.ID { CKRecordZone.ID(zoneName: zoneName, ownerName: ownerName) }
}

struct StoredRecordChange: Codable, Hashable, Sendable {
    var delete: Bool
    var recordName: String
    var zone: StoredZoneID

    init(_ change: CKSyncEngine.PendingRecordZoneChange) {
        switch change {
        case .saveRecord(let id): delete = false; recordName = id.recordName; zone = StoredZoneID(id.zoneID)
        case .deleteRecord(let id): delete = true; recordName = id.recordName; zone = StoredZoneID(id.zoneID)
        }
    }

    var change: CKSyncEngine.PendingRecordZoneChange {
        let id = CKRecord.ID(recordName: recordName, zoneID: zone.id)
        return delete ? .deleteRecord(id) : .saveRecord(id)
    }
}

struct StoredDatabaseChange: Codable, Hashable, Sendable {
    var delete: Bool
    var zone: StoredZoneID

    init(_ change: CKSyncEngine.PendingDatabaseChange) {
        switch change {
        case .saveZone(let zone): delete = false; self.zone = StoredZoneID(zone.zoneID)
        case .deleteZone(let id): delete = true; zone = StoredZoneID(id)
        }
    }

    var change: CKSyncEngine.PendingDatabaseChange {
        delete ? .deleteZone(zone.id) : .saveZone(CKRecordZone(zoneID: zone.id))
    }
}
