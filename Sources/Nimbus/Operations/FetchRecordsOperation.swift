import NimbusProtocol

/// Fetches records by ID, reporting each. The SDK's counterpart of `CKFetchRecordsOperation`.
public final class FetchRecordsOperation: DatabaseOperation, @unchecked Sendable {
    @Guarded public var recordIDs: [Record.ID]?
    /// The fields to fetch; all when `nil`.
    @Guarded public var desiredKeys: [String]?

    @Guarded public var perRecordResultBlock: (@Sendable (Record.ID, Result<Record, NimbusError>) -> Void)?
    /// Success, or ``NimbusError/Code/partialFailure`` naming each record that failed.
    @Guarded public var fetchRecordsResultBlock: (@Sendable (Result<Void, NimbusError>) -> Void)?

    public init(recordIDs: [Record.ID]? = nil) {
        super.init()
        self.recordIDs = recordIDs
    }

    override func execute(in database: Database) async -> Result<Void, NimbusError> {
        let ids = recordIDs ?? []
        var failures: [NimbusError.ItemID: NimbusError] = [:]
        var done = 0
        for (zoneID, zoneIDs) in Database.groupedByZone(ids, zone: \.zoneID) {
            _ = zoneID
            var results: [Record.ID: Result<Record, NimbusError>] = [:]
            do {
                results = try await database.records(for: zoneIDs, desiredKeys: desiredKeys)
            } catch let error as NimbusError {
                if error.code == .operationCancelled { return .failure(error) }
                for id in zoneIDs { results[id] = .failure(error.about(id)) }
            } catch {
                return .failure(NimbusError(.internalError, "\(error)"))
            }
            for id in zoneIDs {
                let result = results[id] ?? .failure(.malformedResponse("no result for \(id)"))
                if case .failure(let error) = result { failures[.record(id)] = error }
                perRecordResultBlock?(id, result)
            }
            done += zoneIDs.count
            reportProgress(done, of: ids.count)
        }
        return Self.outcome(failures, of: ids.count)
    }

    override func deliverResult(_ result: Result<Void, NimbusError>) {
        fetchRecordsResultBlock?(result)
    }
}
