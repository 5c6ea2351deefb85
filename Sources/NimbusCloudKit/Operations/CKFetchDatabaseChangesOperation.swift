import Foundation
import Nimbus

/// Fetches which zones of a database changed since a token: CloudKit's
/// `CKFetchDatabaseChangesOperation`.
///
/// Page by page: ``recordZoneWithIDChangedBlock``, ``recordZoneWithIDWasDeletedBlock``,
/// ``recordZoneWithIDWasPurgedBlock`` or ``recordZoneWithIDWasDeletedDueToUserEncryptedDataResetBlock``
/// for each zone, then ``changeTokenUpdatedBlock`` when
/// more pages follow; last, ``fetchDatabaseChangesResultBlock`` with the final token.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKFetchDatabaseChangesOperation: CKDatabaseOperation, @unchecked Sendable {
    @Protected public var previousServerChangeToken: CKServerChangeToken? = nil
    /// The most zones per page (`0`: the server's page size).
    @Protected public var resultsLimit: Int = 0
    /// Fetch every page (the default), or one.
    @Protected public var fetchAllChanges: Bool = true

    @Protected public var recordZoneWithIDChangedBlock: (@Sendable (CKRecordZone.ID) -> Void)? = nil
    @Protected public var recordZoneWithIDWasDeletedBlock: (@Sendable (CKRecordZone.ID) -> Void)? = nil
    @Protected public var recordZoneWithIDWasPurgedBlock: (@Sendable (CKRecordZone.ID) -> Void)? = nil
    /// Called, instead of ``recordZoneWithIDWasDeletedBlock``, for a zone the user's
    /// encrypted-data reset deleted: upload the device's copies again.
    @Protected public var recordZoneWithIDWasDeletedDueToUserEncryptedDataResetBlock: (@Sendable (CKRecordZone.ID) -> Void)? =
        nil
    @Protected public var changeTokenUpdatedBlock: (@Sendable (CKServerChangeToken) -> Void)? = nil
    @Protected public var fetchDatabaseChangesResultBlock:
        (@Sendable (Result<(serverChangeToken: CKServerChangeToken, moreComing: Bool), any Error>) -> Void)? = nil
    /// The pre-iOS 15 final block.
    @Protected public var fetchDatabaseChangesCompletionBlock: (@Sendable (CKServerChangeToken?, Bool, (any Error)?) -> Void)? =
        nil

    private let last = Locked<(token: CKServerChangeToken, moreComing: Bool)?>(nil)

    public override init() {
        super.init()
    }

    public convenience init(previousServerChangeToken: CKServerChangeToken?) {
        self.init()
        self.previousServerChangeToken = previousServerChangeToken
    }

    override func execute() async {
        let database = targetDatabase
        var token = previousServerChangeToken
        do {
            while true {
                let page = try await database.databaseChanges(since: token, resultsLimit: resultsLimit > 0 ? resultsLimit : nil)
                for modification in page.modifications { recordZoneWithIDChangedBlock?(modification.zoneID) }
                for deletion in page.deletions {
                    switch deletion.reason {
                    case .deleted: recordZoneWithIDWasDeletedBlock?(deletion.zoneID)
                    case .purged: recordZoneWithIDWasPurgedBlock?(deletion.zoneID)
                    case .encryptedDataReset: recordZoneWithIDWasDeletedDueToUserEncryptedDataResetBlock?(deletion.zoneID)
                    }
                }
                token = page.changeToken
                last.withLock { $0 = (page.changeToken, page.moreComing) }
                guard page.moreComing, fetchAllChanges, cancellationError == nil else { break }
                changeTokenUpdatedBlock?(page.changeToken)
            }
        } catch {
            finishReporting(CKError.wrapping(error))
            return
        }
        finishReporting(cancellationError)
    }

    override func reportFinal(_ error: CKError?) {
        let outcome = last.current
        if let error {
            fetchDatabaseChangesResultBlock?(.failure(error))
        } else if let outcome {
            fetchDatabaseChangesResultBlock?(.success((outcome.token, outcome.moreComing)))
        }
        fetchDatabaseChangesCompletionBlock?(outcome?.token, outcome?.moreComing ?? false, error)
    }
}
