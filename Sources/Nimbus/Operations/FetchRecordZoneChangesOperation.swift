import NimbusProtocol

/// Fetches the changes of one or more zones since their tokens, reporting each changed and
/// deleted record and each zone's new token. The SDK's counterpart of
/// `CKFetchRecordZoneChangesOperation`, and the heart of a sync.
///
/// With ``fetchAllChanges`` (the default) each zone is fetched page after page until the
/// server has no more; ``recordZoneChangeTokensUpdatedBlock`` reports the token after each
/// page that had more coming, so a client can persist progress; ``recordZoneFetchResultBlock``
/// reports each zone's final token (or its error, such as
/// ``NimbusError/Code/changeTokenExpired``).
public final class FetchRecordZoneChangesOperation: DatabaseOperation, @unchecked Sendable {
    /// What to fetch for one zone.
    public struct ZoneConfiguration: Sendable, Hashable {
        public var previousServerChangeToken: ServerChangeToken?
        public var resultsLimit: Int?
        public var desiredKeys: [String]?

        public init(previousServerChangeToken: ServerChangeToken? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil) {
            self.previousServerChangeToken = previousServerChangeToken
            self.resultsLimit = resultsLimit
            self.desiredKeys = desiredKeys
        }
    }

    /// A zone's outcome: its new token and whether more changes wait.
    public struct ZoneResult: Sendable, Hashable {
        public var serverChangeToken: ServerChangeToken
        public var moreComing: Bool
    }

    @Guarded public var recordZoneIDs: [ZoneID]?
    @Guarded public var configurationsByRecordZoneID: [ZoneID: ZoneConfiguration]?
    /// Keep fetching each zone until no more changes wait. Defaults to `true`.
    @Guarded public var fetchAllChanges = true

    @Guarded public var recordWasChangedBlock: (@Sendable (Record.ID, Result<Record, NimbusError>) -> Void)?
    @Guarded public var recordWithIDWasDeletedBlock: (@Sendable (Record.ID, _ recordType: String?) -> Void)?
    @Guarded public var recordZoneChangeTokensUpdatedBlock: (@Sendable (ZoneID, ServerChangeToken) -> Void)?
    @Guarded public var recordZoneFetchResultBlock: (@Sendable (ZoneID, Result<ZoneResult, NimbusError>) -> Void)?
    /// Success, or ``NimbusError/Code/partialFailure`` naming each zone that failed.
    @Guarded public var fetchRecordZoneChangesResultBlock: (@Sendable (Result<Void, NimbusError>) -> Void)?

    public init(recordZoneIDs: [ZoneID]? = nil, configurationsByRecordZoneID: [ZoneID: ZoneConfiguration]? = nil) {
        super.init()
        self.recordZoneIDs = recordZoneIDs
        self.configurationsByRecordZoneID = configurationsByRecordZoneID
    }

    override func execute(in database: Database) async -> Result<Void, NimbusError> {
        let zones = recordZoneIDs ?? []
        let configurations = configurationsByRecordZoneID ?? [:]
        var failures: [NimbusError.ItemID: NimbusError] = [:]
        for (index, zoneID) in zones.enumerated() {
            let configuration = configurations[zoneID] ?? ZoneConfiguration()
            var token = configuration.previousServerChangeToken
            do {
                while true {
                    let page = try await database.recordZoneChanges(
                        inZoneWith: zoneID, since: token, desiredKeys: configuration.desiredKeys,
                        resultsLimit: configuration.resultsLimit)
                    for record in page.modifications { recordWasChangedBlock?(record.id, .success(record)) }
                    for deletion in page.deletions { recordWithIDWasDeletedBlock?(deletion.recordID, deletion.recordType) }
                    token = page.changeToken
                    if page.moreComing && fetchAllChanges {
                        recordZoneChangeTokensUpdatedBlock?(zoneID, page.changeToken)
                        continue
                    }
                    recordZoneFetchResultBlock?(
                        zoneID, .success(ZoneResult(serverChangeToken: page.changeToken, moreComing: page.moreComing)))
                    break
                }
            } catch {
                let failure = error as? NimbusError ?? NimbusError(.internalError, "\(error)")
                if failure.code == .operationCancelled { return .failure(failure) }
                failures[.zone(zoneID)] = failure
                recordZoneFetchResultBlock?(zoneID, .failure(failure))
            }
            reportProgress(index + 1, of: zones.count)
        }
        return Self.outcome(failures, of: zones.count)
    }

    override func deliverResult(_ result: Result<Void, NimbusError>) {
        fetchRecordZoneChangesResultBlock?(result)
    }
}
