import NimbusProtocol

/// Fetches which zones changed, were deleted or purged since a token. The SDK's counterpart
/// of `CKFetchDatabaseChangesOperation`; follow it with a ``FetchRecordZoneChangesOperation``
/// for the changed zones only.
public final class FetchDatabaseChangesOperation: DatabaseOperation, @unchecked Sendable {
    @Guarded public var previousServerChangeToken: ServerChangeToken?
    @Guarded public var resultsLimit: Int?
    /// Keep fetching until no more changes wait. Defaults to `true`.
    @Guarded public var fetchAllChanges = true

    @Guarded public var recordZoneWithIDChangedBlock: (@Sendable (ZoneID) -> Void)?
    @Guarded public var recordZoneWithIDWasDeletedBlock: (@Sendable (ZoneID) -> Void)?
    @Guarded public var recordZoneWithIDWasPurgedBlock: (@Sendable (ZoneID) -> Void)?
    /// The token after each page that had more coming.
    @Guarded public var changeTokenUpdatedBlock: (@Sendable (ServerChangeToken) -> Void)?
    /// The final token and whether more changes wait, or the failure.
    @Guarded public var fetchDatabaseChangesResultBlock:
        (@Sendable (Result<(serverChangeToken: ServerChangeToken, moreComing: Bool), NimbusError>) -> Void)?

    private let final = Locked<(ServerChangeToken, Bool)?>(nil)

    public init(previousServerChangeToken: ServerChangeToken? = nil) {
        super.init()
        self.previousServerChangeToken = previousServerChangeToken
    }

    override func execute(in database: Database) async -> Result<Void, NimbusError> {
        var token = previousServerChangeToken
        var pages = 0
        do {
            while true {
                let page = try await database.databaseChanges(since: token, resultsLimit: resultsLimit)
                page.modifiedZoneIDs.forEach { recordZoneWithIDChangedBlock?($0) }
                page.deletedZoneIDs.forEach { recordZoneWithIDWasDeletedBlock?($0) }
                page.purgedZoneIDs.forEach { recordZoneWithIDWasPurgedBlock?($0) }
                token = page.changeToken
                pages += 1
                reportProgress(pages, of: nil)
                if page.moreComing && fetchAllChanges {
                    changeTokenUpdatedBlock?(page.changeToken)
                    continue
                }
                final.withLock { $0 = (page.changeToken, page.moreComing) }
                return .success(())
            }
        } catch {
            return .failure(error as? NimbusError ?? NimbusError(.internalError, "\(error)"))
        }
    }

    override func deliverResult(_ result: Result<Void, NimbusError>) {
        fetchDatabaseChangesResultBlock?(
            result.flatMap {
                guard let (token, moreComing) = final.current else {
                    return .failure(NimbusError(.internalError, "no change token"))
                }
                return .success((token, moreComing))
            })
    }
}
