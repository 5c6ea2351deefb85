import Foundation
import Nimbus
import NimbusProtocol

/// Saves and deletes records: CloudKit's `CKModifyRecordsOperation`.
///
/// Callbacks, in order: ``perRecordProgressBlock`` while a record's asset files upload;
/// ``perRecordSaveBlock`` for each record to save, then ``perRecordDeleteBlock`` for each
/// record to delete; then ``modifyRecordsResultBlock`` (``CKError/Code/partialFailure`` with
/// ``CKPartialErrorsByItemIDKey`` when some items failed), and the deprecated
/// ``modifyRecordsCompletionBlock``.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKModifyRecordsOperation: CKDatabaseOperation, @unchecked Sendable {
    /// What a save does when the server's copy changed since the record was fetched.
    public enum RecordSavePolicy: Int, Sendable, Hashable {
        /// Fail with ``CKError/Code/serverRecordChanged`` (the default).
        case ifServerRecordUnchanged = 0
        /// Write the changed keys over the server's copy.
        case changedKeys = 1
        /// Write every key over the server's copy.
        case allKeys = 2

        var nimbus: SavePolicy {
            switch self {
            case .ifServerRecordUnchanged: return .ifServerRecordUnchanged
            case .changedKeys: return .changedKeys
            case .allKeys: return .allKeys
            }
        }
    }

    @Protected public var recordsToSave: [CKRecord]? = nil
    @Protected public var recordIDsToDelete: [CKRecord.ID]? = nil
    @Protected public var savePolicy: RecordSavePolicy = .ifServerRecordUnchanged
    /// In custom zones, all of a zone's changes succeed or none do.
    @Protected public var isAtomic: Bool = true
    /// Kept for source compatibility; Nimbus does not echo it.
    @Protected public var clientChangeTokenData: Data? = nil

    @Protected public var perRecordProgressBlock: (@Sendable (CKRecord, Double) -> Void)? = nil
    @Protected public var perRecordSaveBlock: (@Sendable (CKRecord.ID, Result<CKRecord, any Error>) -> Void)? = nil
    @Protected public var perRecordDeleteBlock: (@Sendable (CKRecord.ID, Result<Void, any Error>) -> Void)? = nil
    @Protected public var modifyRecordsResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil
    /// The pre-iOS 15 final block: saved records, deleted IDs, error.
    @Protected public var modifyRecordsCompletionBlock:
        (@Sendable ([CKRecord]?, [CKRecord.ID]?, (any Error)?) -> Void)? = nil

    /// What the final blocks report.
    private let outcome = Locked<(saved: [CKRecord], deleted: [CKRecord.ID])>(([], []))

    public override init() {
        super.init()
    }

    public convenience init(recordsToSave: [CKRecord]? = nil, recordIDsToDelete: [CKRecord.ID]? = nil) {
        self.init()
        self.recordsToSave = recordsToSave
        self.recordIDsToDelete = recordIDsToDelete
    }

    override func execute() async {
        let toSave = recordsToSave ?? []
        let toDelete = recordIDsToDelete ?? []
        let progress = perRecordProgressBlock
        let byID = Dictionary(toSave.map { ($0.recordID.nimbus, $0) }, uniquingKeysWith: { first, _ in first })
        let results: (saveResults: [Record.ID: Result<Record, NimbusError>], deleteResults: [Record.ID: Result<Void, NimbusError>])
        do {
            let database = try targetDatabase.configured()
            results = try await database.modifyRecordsInRequests(
                saving: toSave.map(\.nimbus), deleting: toDelete.map(\.nimbus), savePolicy: savePolicy.nimbus,
                atomically: isAtomic,
                assetProgress: progress.map { report in
                    { @Sendable id, _, transfer in
                        if let record = byID[id] { report(record, transfer.fractionCompleted) }
                    }
                })
        } catch {
            finishReporting(CKError.wrapping(error))
            return
        }
        var failures: [CKError.PartialItemID: CKError] = [:]
        for record in toSave {
            let result: Result<CKRecord, any Error>
            switch results.saveResults[record.recordID.nimbus] {
            case .success(let saved)?:
                let savedRecord = CKRecord.make(saved)
                outcome.withLock { $0.saved.append(savedRecord) }
                result = .success(savedRecord)
            case .failure(let error)?:
                failures[.record(record.recordID)] = CKError(error)
                result = .failure(CKError(error))
            case nil:
                let error = CKError(.internalError, message: "the server returned no result for \(record.recordID.recordName)")
                failures[.record(record.recordID)] = error
                result = .failure(error)
            }
            perRecordSaveBlock?(record.recordID, result)
        }
        for id in toDelete {
            let result: Result<Void, any Error>
            switch results.deleteResults[id.nimbus] {
            case .success?:
                outcome.withLock { $0.deleted.append(id) }
                result = .success(())
            case .failure(let error)?:
                failures[.record(id)] = CKError(error)
                result = .failure(CKError(error))
            case nil:
                let error = CKError(.internalError, message: "the server returned no result for \(id.recordName)")
                failures[.record(id)] = error
                result = .failure(error)
            }
            perRecordDeleteBlock?(id, result)
        }
        finishReporting(failures.isEmpty ? cancellationError : CKError.partialFailure(failures))
    }

    override func reportFinal(_ error: CKError?) {
        modifyRecordsResultBlock?(error.map { .failure($0) } ?? .success(()))
        if let completion = modifyRecordsCompletionBlock {
            let (saved, deleted) = outcome.current
            completion(saved, deleted, error)
        }
    }
}
