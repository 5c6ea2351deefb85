import NimbusProtocol

/// Saves and deletes records, reporting each item. The SDK's counterpart of
/// `CKModifyRecordsOperation`.
///
/// One request per zone; ``perRecordSaveBlock`` and ``perRecordDeleteBlock`` run as each
/// zone's results arrive, then ``modifyRecordsResultBlock`` runs once with success or a
/// ``NimbusError/Code/partialFailure`` whose ``NimbusError/partialErrorsByItemID`` names
/// each failed record.
///
/// Records whose fields hold new ``Asset``s have their files uploaded first, as
/// ``Database/modifyRecords(saving:deleting:savePolicy:atomically:deleteChangeTags:assetProgress:)``
/// does; ``perAssetProgressBlock`` reports the bytes sent.
public final class ModifyRecordsOperation: DatabaseOperation, @unchecked Sendable {
    @Guarded public var recordsToSave: [Record]?
    @Guarded public var recordIDsToDelete: [Record.ID]?
    /// Change tags for some of ``recordIDsToDelete``: those deletions are locked and fail with
    /// ``NimbusError/Code/serverRecordChanged`` if the record changed since that version.
    @Guarded public var deleteChangeTags: [Record.ID: String] = [:]
    @Guarded public var savePolicy: SavePolicy = .ifServerRecordUnchanged
    /// All of a zone's changes succeed or none do (custom zones). Defaults to `true`.
    @Guarded public var isAtomic = true

    @Guarded public var perRecordSaveBlock: (@Sendable (Record.ID, Result<Record, NimbusError>) -> Void)?
    @Guarded public var perRecordDeleteBlock: (@Sendable (Record.ID, Result<Void, NimbusError>) -> Void)?
    @Guarded public var modifyRecordsResultBlock: (@Sendable (Result<Void, NimbusError>) -> Void)?
    /// Called as asset files upload: the record, the field and the bytes sent of that file.
    @Guarded public var perAssetProgressBlock: (@Sendable (Record.ID, String, TransferProgress) -> Void)?

    public init(recordsToSave: [Record]? = nil, recordIDsToDelete: [Record.ID]? = nil) {
        super.init()
        self.recordsToSave = recordsToSave
        self.recordIDsToDelete = recordIDsToDelete
    }

    override func execute(in database: Database) async -> Result<Void, NimbusError> {
        let saves = recordsToSave ?? []
        let deletes = recordIDsToDelete ?? []
        let zones = Database.groupedByZone(saves.map(\.id) + deletes, zone: \.zoneID).map(\.0)
        let total = saves.count + deletes.count
        var failures: [NimbusError.ItemID: NimbusError] = [:]
        var done = 0
        reportProgress(0, of: total)
        for zoneID in zones {
            let zoneSaves = saves.filter { $0.id.zoneID == zoneID }
            let zoneDeletes = deletes.filter { $0.zoneID == zoneID }
            var saveResults: [Record.ID: Result<Record, NimbusError>] = [:]
            var deleteResults: [Record.ID: Result<Void, NimbusError>] = [:]
            do {
                (saveResults, deleteResults) = try await database.modifyRecords(
                    saving: zoneSaves, deleting: zoneDeletes, savePolicy: savePolicy, atomically: isAtomic,
                    deleteChangeTags: deleteChangeTags, assetProgress: perAssetProgressBlock)
            } catch let error as NimbusError {
                if error.code == .operationCancelled { return .failure(error) }
                for record in zoneSaves { saveResults[record.id] = .failure(error.about(record.id)) }
                for id in zoneDeletes { deleteResults[id] = .failure(error.about(id)) }
            } catch {
                return .failure(NimbusError(.internalError, "\(error)"))
            }
            for record in zoneSaves {
                let result = saveResults[record.id] ?? .failure(.malformedResponse("no result for \(record.id)"))
                if case .failure(let error) = result { failures[.record(record.id)] = error }
                perRecordSaveBlock?(record.id, result)
            }
            for id in zoneDeletes {
                let result = deleteResults[id] ?? .failure(.malformedResponse("no result for \(id)"))
                if case .failure(let error) = result { failures[.record(id)] = error }
                perRecordDeleteBlock?(id, result)
            }
            done += zoneSaves.count + zoneDeletes.count
            reportProgress(done, of: total)
        }
        return Self.outcome(failures, of: total)
    }

    override func deliverResult(_ result: Result<Void, NimbusError>) {
        modifyRecordsResultBlock?(result)
    }
}
