import Foundation
import Nimbus

/// Creates and deletes zones: CloudKit's `CKModifyRecordZonesOperation`. Per-zone blocks
/// for saves then deletions, in order, then ``modifyRecordZonesResultBlock``.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKModifyRecordZonesOperation: CKDatabaseOperation, @unchecked Sendable {
    @Protected public var recordZonesToSave: [CKRecordZone]? = nil
    @Protected public var recordZoneIDsToDelete: [CKRecordZone.ID]? = nil
    @Protected public var perRecordZoneSaveBlock: (@Sendable (CKRecordZone.ID, Result<CKRecordZone, any Error>) -> Void)? =
        nil
    @Protected public var perRecordZoneDeleteBlock: (@Sendable (CKRecordZone.ID, Result<Void, any Error>) -> Void)? = nil
    @Protected public var modifyRecordZonesResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil
    /// The pre-iOS 15 final block.
    @Protected public var modifyRecordZonesCompletionBlock:
        (@Sendable ([CKRecordZone]?, [CKRecordZone.ID]?, (any Error)?) -> Void)? = nil

    private let outcome = Locked<(saved: [CKRecordZone], deleted: [CKRecordZone.ID])>(([], []))

    public override init() {
        super.init()
    }

    public convenience init(recordZonesToSave: [CKRecordZone]? = nil, recordZoneIDsToDelete: [CKRecordZone.ID]? = nil) {
        self.init()
        self.recordZonesToSave = recordZonesToSave
        self.recordZoneIDsToDelete = recordZoneIDsToDelete
    }

    override func execute() async {
        let toSave = recordZonesToSave ?? []
        let toDelete = recordZoneIDsToDelete ?? []
        let results: (
            saveResults: [CKRecordZone.ID: Result<CKRecordZone, any Error>],
            deleteResults: [CKRecordZone.ID: Result<Void, any Error>]
        )
        do {
            results = try await targetDatabase.modifyRecordZones(saving: toSave, deleting: toDelete)
        } catch {
            finishReporting(CKError.wrapping(error))
            return
        }
        var failures: [CKError.PartialItemID: CKError] = [:]
        let saved = report(
            toSave.map(\.zoneID), results.saveResults, key: { .zone($0) }, into: &failures, to: perRecordZoneSaveBlock)
        let deleted = report(
            toDelete, results.deleteResults, key: { .zone($0) }, into: &failures, to: perRecordZoneDeleteBlock)
        outcome.withLock { $0 = (saved.map(\.1), deleted.map(\.0)) }
        finishReporting(failures.isEmpty ? cancellationError : CKError.partialFailure(failures))
    }

    override func reportFinal(_ error: CKError?) {
        modifyRecordZonesResultBlock?(error.map { .failure($0) } ?? .success(()))
        if let completion = modifyRecordZonesCompletionBlock {
            let (saved, deleted) = outcome.current
            completion(saved, deleted, error)
        }
    }
}

/// Fetches zones by ID, or every zone: CloudKit's `CKFetchRecordZonesOperation`.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKFetchRecordZonesOperation: CKDatabaseOperation, @unchecked Sendable {
    /// The zones to fetch; every zone of the database when `nil`.
    @Protected public var recordZoneIDs: [CKRecordZone.ID]? = nil
    @Protected public var perRecordZoneResultBlock: (@Sendable (CKRecordZone.ID, Result<CKRecordZone, any Error>) -> Void)? =
        nil
    @Protected public var fetchRecordZonesResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    public override init() {
        super.init()
    }

    public convenience init(recordZoneIDs: [CKRecordZone.ID]) {
        self.init()
        self.recordZoneIDs = recordZoneIDs
    }

    /// An operation that fetches every zone of the database.
    public static func fetchAllRecordZonesOperation() -> CKFetchRecordZonesOperation {
        CKFetchRecordZonesOperation()
    }

    override func execute() async {
        var failures: [CKError.PartialItemID: CKError] = [:]
        do {
            let database = targetDatabase
            if let ids = recordZoneIDs {
                let results = try await database.recordZones(for: ids)
                _ = report(ids, results, key: { .zone($0) }, into: &failures, to: perRecordZoneResultBlock)
            } else {
                for zone in try await database.allRecordZones() { perRecordZoneResultBlock?(zone.zoneID, .success(zone)) }
            }
        } catch {
            finishReporting(CKError.wrapping(error))
            return
        }
        finishReporting(failures.isEmpty ? cancellationError : CKError.partialFailure(failures))
    }

    override func reportFinal(_ error: CKError?) {
        fetchRecordZonesResultBlock?(error.map { .failure($0) } ?? .success(()))
    }
}
