import NimbusProtocol

/// Runs a query, reporting each matching record, and ends with a cursor when more matched.
/// The SDK's counterpart of `CKQueryOperation`.
public final class QueryOperation: DatabaseOperation, @unchecked Sendable {
    @Guarded public var query: Query?
    /// Continue a previous query from here instead of starting ``query``.
    @Guarded public var cursor: QueryCursor?
    /// The zone to search; every zone when `nil`.
    @Guarded public var zoneID: ZoneID?
    @Guarded public var desiredKeys: [String]?
    @Guarded public var resultsLimit: Int?

    @Guarded public var recordMatchedBlock: (@Sendable (Record.ID, Result<Record, NimbusError>) -> Void)?
    /// The cursor to continue from (`nil` when every match was returned), or the failure.
    @Guarded public var queryResultBlock: (@Sendable (Result<QueryCursor?, NimbusError>) -> Void)?

    private let resultCursor = Locked<QueryCursor?>(nil)

    public init(query: Query? = nil) {
        super.init()
        self.query = query
    }

    public init(cursor: QueryCursor) {
        super.init()
        self.cursor = cursor
    }

    override func execute(in database: Database) async -> Result<Void, NimbusError> {
        do {
            let page: (matchResults: [(Record.ID, Result<Record, NimbusError>)], queryCursor: QueryCursor?)
            if let cursor {
                page = try await database.records(continuingMatchFrom: cursor, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
            } else if let query {
                page = try await database.records(
                    matching: query, inZoneWith: zoneID, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
            } else {
                return .failure(NimbusError(.invalidArguments, "the query operation has neither a query nor a cursor"))
            }
            for (id, result) in page.matchResults { recordMatchedBlock?(id, result) }
            reportProgress(page.matchResults.count, of: nil)
            resultCursor.withLock { $0 = page.queryCursor }
            return .success(())
        } catch {
            return .failure(error as? NimbusError ?? NimbusError(.internalError, "\(error)"))
        }
    }

    override func deliverResult(_ result: Result<Void, NimbusError>) {
        queryResultBlock?(result.map { resultCursor.current })
    }
}
