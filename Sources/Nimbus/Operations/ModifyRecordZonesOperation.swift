import NimbusProtocol

/// Creates and deletes zones, reporting each. The SDK's counterpart of
/// `CKModifyRecordZonesOperation`.
public final class ModifyRecordZonesOperation: DatabaseOperation, @unchecked Sendable {
    @Guarded public var recordZonesToSave: [RecordZone]?
    @Guarded public var recordZoneIDsToDelete: [ZoneID]?

    @Guarded public var perRecordZoneSaveBlock: (@Sendable (ZoneID, Result<RecordZone, NimbusError>) -> Void)?
    @Guarded public var perRecordZoneDeleteBlock: (@Sendable (ZoneID, Result<Void, NimbusError>) -> Void)?
    /// Success, or ``NimbusError/Code/partialFailure`` naming each zone that failed.
    @Guarded public var modifyRecordZonesResultBlock: (@Sendable (Result<Void, NimbusError>) -> Void)?

    public init(recordZonesToSave: [RecordZone]? = nil, recordZoneIDsToDelete: [ZoneID]? = nil) {
        super.init()
        self.recordZonesToSave = recordZonesToSave
        self.recordZoneIDsToDelete = recordZoneIDsToDelete
    }

    override func execute(in database: Database) async -> Result<Void, NimbusError> {
        let saves = recordZonesToSave ?? []
        let deletes = recordZoneIDsToDelete ?? []
        do {
            let results = try await database.modifyRecordZones(saving: saves, deleting: deletes)
            var failures: [NimbusError.ItemID: NimbusError] = [:]
            for zone in saves {
                let result = results.saveResults[zone.zoneID] ?? .failure(.malformedResponse("no result"))
                if case .failure(let error) = result { failures[.zone(zone.zoneID)] = error }
                perRecordZoneSaveBlock?(zone.zoneID, result)
            }
            for zoneID in deletes {
                let result = results.deleteResults[zoneID] ?? .failure(.malformedResponse("no result"))
                if case .failure(let error) = result { failures[.zone(zoneID)] = error }
                perRecordZoneDeleteBlock?(zoneID, result)
            }
            reportProgress(saves.count + deletes.count, of: saves.count + deletes.count)
            return Self.outcome(failures, of: saves.count + deletes.count)
        } catch {
            return .failure(error as? NimbusError ?? NimbusError(.internalError, "\(error)"))
        }
    }

    override func deliverResult(_ result: Result<Void, NimbusError>) {
        modifyRecordZonesResultBlock?(result)
    }
}
