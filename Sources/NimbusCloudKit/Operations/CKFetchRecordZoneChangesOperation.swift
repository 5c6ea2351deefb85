import Foundation

/// Fetches the changes of several zones since their tokens: CloudKit's
/// `CKFetchRecordZoneChangesOperation`.
///
/// For each zone in ``recordZoneIDs``, page by page: ``recordWasChangedBlock`` for each
/// changed record and ``recordWithIDWasDeletedBlock`` for each deletion, then
/// ``recordZoneChangeTokensUpdatedBlock`` with the page's token when more pages follow; at the
/// zone's end ``recordZoneFetchResultBlock`` with the final token (or the zone's error). Last,
/// ``fetchRecordZoneChangesResultBlock`` (``CKError/Code/partialFailure`` keyed by zone ID
/// when some zones failed). With ``fetchAllChanges`` off, each zone stops after one page and
/// reports `moreComing`.
///
/// `@unchecked Sendable`: see ``CKOperation``.
open class CKFetchRecordZoneChangesOperation: CKDatabaseOperation, @unchecked Sendable {
    /// Where to start in one zone, and what to fetch.
    ///
    /// `@unchecked Sendable`: every stored property is `@Protected`.
    public final class ZoneConfiguration: NSObject, @unchecked Sendable {
        @Protected public var previousServerChangeToken: CKServerChangeToken? = nil
        /// The most changes per page (`0` or `nil`: the server's page size).
        @Protected public var resultsLimit: Int = 0
        @Protected public var desiredKeys: [CKRecord.FieldKey]? = nil

        public override init() {}

        public convenience init(
            previousServerChangeToken: CKServerChangeToken? = nil, resultsLimit: Int? = nil,
            desiredKeys: [CKRecord.FieldKey]? = nil
        ) {
            self.init()
            self.previousServerChangeToken = previousServerChangeToken
            self.resultsLimit = resultsLimit ?? 0
            self.desiredKeys = desiredKeys
        }
    }

    @Protected public var recordZoneIDs: [CKRecordZone.ID]? = nil
    @Protected public var configurationsByRecordZoneID: [CKRecordZone.ID: ZoneConfiguration]? = nil
    /// Fetch every page of each zone (the default), or one page per zone.
    @Protected public var fetchAllChanges: Bool = true

    @Protected public var recordWasChangedBlock: (@Sendable (CKRecord.ID, Result<CKRecord, any Error>) -> Void)? = nil
    @Protected public var recordWithIDWasDeletedBlock: (@Sendable (CKRecord.ID, CKRecord.RecordType) -> Void)? = nil
    @Protected public var recordZoneChangeTokensUpdatedBlock:
        (@Sendable (CKRecordZone.ID, CKServerChangeToken?, Data?) -> Void)? = nil
    @Protected public var recordZoneFetchResultBlock:
        (@Sendable (
            CKRecordZone.ID,
            Result<(serverChangeToken: CKServerChangeToken, clientChangeTokenData: Data?, moreComing: Bool), any Error>
        ) -> Void)? = nil
    @Protected public var fetchRecordZoneChangesResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil
    /// The pre-iOS 15 per-record block (changed records only).
    @Protected public var recordChangedBlock: (@Sendable (CKRecord) -> Void)? = nil

    public override init() {
        super.init()
    }

    public convenience init(
        recordZoneIDs: [CKRecordZone.ID], configurationsByRecordZoneID: [CKRecordZone.ID: ZoneConfiguration]? = nil
    ) {
        self.init()
        self.recordZoneIDs = recordZoneIDs
        self.configurationsByRecordZoneID = configurationsByRecordZoneID
    }

    override func execute() async {
        let database = targetDatabase
        var failures: [CKError.PartialItemID: CKError] = [:]
        for zoneID in recordZoneIDs ?? [] {
            if let cancelled = cancellationError {
                finishReporting(cancelled)
                return
            }
            let configuration = configurationsByRecordZoneID?[zoneID]
            var token = configuration?.previousServerChangeToken
            let limit = configuration.map(\.resultsLimit).flatMap { $0 > 0 ? $0 : nil }
            do {
                while true {
                    let page = try await database.recordZoneChanges(
                        inZoneWith: zoneID, since: token, desiredKeys: configuration?.desiredKeys, resultsLimit: limit)
                    for (id, result) in page.modificationResultsByID.sorted(by: { $0.key.recordName < $1.key.recordName }) {
                        let recordResult = result.map(\.record)
                        recordWasChangedBlock?(id, recordResult)
                        if case .success(let record) = recordResult { recordChangedBlock?(record) }
                    }
                    for deletion in page.deletions { recordWithIDWasDeletedBlock?(deletion.recordID, deletion.recordType) }
                    token = page.changeToken
                    if page.moreComing && fetchAllChanges && cancellationError == nil {
                        recordZoneChangeTokensUpdatedBlock?(zoneID, page.changeToken, nil)
                        continue
                    }
                    recordZoneFetchResultBlock?(zoneID, .success((page.changeToken, nil, page.moreComing)))
                    break
                }
            } catch {
                let ckError = CKError.wrapping(error)
                failures[.zone(zoneID)] = ckError
                recordZoneFetchResultBlock?(zoneID, .failure(ckError))
            }
        }
        finishReporting(cancellationError ?? (failures.isEmpty ? nil : CKError.partialFailure(failures)))
    }

    override func reportFinal(_ error: CKError?) {
        fetchRecordZoneChangesResultBlock?(error.map { .failure($0) } ?? .success(()))
    }
}
