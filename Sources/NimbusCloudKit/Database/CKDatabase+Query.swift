import Foundation
import Nimbus
import NimbusProtocol

extension CKDatabase {
    /// Records matching a query, each with its own result, and a cursor when more matched.
    /// - Parameters:
    ///   - zoneID: the zone to search; every zone of the database when `nil`.
    ///   - resultsLimit: the most records to return (the server's page size by default).
    /// - Throws: ``CKError/Code/invalidArguments`` for a predicate CloudKit does not support.
    public func records(
        matching query: CKQuery, inZoneWith zoneID: CKRecordZone.ID? = nil, desiredKeys: [CKRecord.FieldKey]? = nil,
        resultsLimit: Int = CKQueryOperation.maximumResults
    ) async throws -> (matchResults: [(CKRecord.ID, Result<CKRecord, any Error>)], queryCursor: CKQueryOperation.Cursor?) {
        let database = try configured()
        let nimbusQuery = try query.nimbus()
        let page = try await mappingErrors {
            try await database.records(
                matching: nimbusQuery, inZoneWith: zoneID?.nimbus, desiredKeys: desiredKeys,
                resultsLimit: Self.limit(resultsLimit))
        }
        return (await Self.matchResults(page.matchResults, database), page.queryCursor.map(CKQueryOperation.Cursor.init))
    }

    /// The next results of a query that returned a cursor.
    public func records(
        continuingMatchFrom queryCursor: CKQueryOperation.Cursor, desiredKeys: [CKRecord.FieldKey]? = nil,
        resultsLimit: Int = CKQueryOperation.maximumResults
    ) async throws -> (matchResults: [(CKRecord.ID, Result<CKRecord, any Error>)], queryCursor: CKQueryOperation.Cursor?) {
        let database = try configured()
        let page = try await mappingErrors {
            try await database.records(
                continuingMatchFrom: queryCursor.cursor, desiredKeys: desiredKeys, resultsLimit: Self.limit(resultsLimit))
        }
        return (await Self.matchResults(page.matchResults, database), page.queryCursor.map(CKQueryOperation.Cursor.init))
    }

    /// `maximumResults` (or anything not positive) leaves the page size to the server.
    static func limit(_ resultsLimit: Int) -> Int? {
        resultsLimit > 0 && resultsLimit != CKQueryOperation.maximumResults ? resultsLimit : nil
    }

    static func matchResults(
        _ results: [(Record.ID, Result<Record, NimbusError>)], _ database: Database
    ) async -> [(CKRecord.ID, Result<CKRecord, any Error>)] {
        var converted: [(CKRecord.ID, Result<CKRecord, any Error>)] = []
        for (id, result) in results {
            switch result {
            case .success(let record):
                converted.append((CKRecord.ID(id), .success(CKRecord.make(await database.downloadingAssets(of: record)))))
            case .failure(let error): converted.append((CKRecord.ID(id), .failure(CKError(error))))
            }
        }
        return converted
    }
}
