import Foundation
import Nimbus
import NimbusProtocol

extension CKDatabase {
    /// Fetches one record.
    /// - Throws: ``CKError/Code/unknownItem`` when it does not exist.
    public func record(for recordID: CKRecord.ID) async throws -> CKRecord {
        let results = try await records(for: [recordID])
        guard let result = results[recordID] else {
            throw CKError(.internalError, message: "the server returned no result for \(recordID.recordName)")
        }
        return try result.get()
    }

    /// Fetches records, each with its own result (a missing record fails with
    /// ``CKError/Code/unknownItem``).
    public func records(
        for ids: [CKRecord.ID], desiredKeys: [CKRecord.FieldKey]? = nil
    ) async throws -> [CKRecord.ID: Result<CKRecord, any Error>] {
        let database = try configured()
        let fetched = try await mappingErrors {
            try await database.records(for: ids.map(\.nimbus), desiredKeys: desiredKeys)
        }
        var results: [CKRecord.ID: Result<CKRecord, any Error>] = [:]
        for id in ids {
            switch fetched[id.nimbus] {
            case .success(let record)?:
                results[id] = .success(CKRecord.make(await database.downloadingAssets(of: record)))
            case .failure(let error)?: results[id] = .failure(CKError(error))
            case nil: results[id] = .failure(CKError(.internalError, message: "no result for \(id.recordName)"))
            }
        }
        return await markingEncryptedDataReset(results)
    }

    /// Saves one record (only its changed keys), uploading its new assets' files first.
    /// - Returns: the record as the server saved it.
    /// - Throws: ``CKError/Code/serverRecordChanged`` with the server, client and ancestor
    ///   records when the server's copy changed since this one was fetched.
    @discardableResult
    public func save(_ record: CKRecord) async throws -> CKRecord {
        let (saveResults, _) = try await modifyRecords(
            saving: [record], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        guard let result = saveResults[record.recordID] else {
            throw CKError(.internalError, message: "the server returned no result for \(record.recordID.recordName)")
        }
        return try result.get()
    }

    /// Deletes one record.
    @discardableResult
    public func deleteRecord(withID recordID: CKRecord.ID) async throws -> CKRecord.ID {
        let (_, deleteResults) = try await modifyRecords(saving: [], deleting: [recordID], atomically: false)
        guard let result = deleteResults[recordID] else {
            throw CKError(.internalError, message: "the server returned no result for \(recordID.recordName)")
        }
        try result.get()
        return recordID
    }

    /// Saves and deletes records, with each item's result. More items than the server takes
    /// in one request are sent in several when not atomic, without the caller seeing it.
    ///
    /// - Parameters:
    ///   - savePolicy: what a save does when the server's copy changed (see
    ///     ``CKModifyRecordsOperation/RecordSavePolicy``).
    ///   - atomically: in custom zones, all of a zone's changes succeed or none do.
    public func modifyRecords(
        saving recordsToSave: [CKRecord], deleting recordIDsToDelete: [CKRecord.ID],
        savePolicy: CKModifyRecordsOperation.RecordSavePolicy = .ifServerRecordUnchanged, atomically: Bool = true
    ) async throws -> (
        saveResults: [CKRecord.ID: Result<CKRecord, any Error>], deleteResults: [CKRecord.ID: Result<Void, any Error>]
    ) {
        let database = try configured()
        let results: Database.ModifyResults
        do throws(CKError) {
            results = try await mappingErrors {
                try await database.modifyRecordsInRequests(
                    saving: recordsToSave.map { $0.nimbus }, deleting: recordIDsToDelete.map(\.nimbus),
                    savePolicy: savePolicy.nimbus, atomically: atomically)
            }
        } catch {
            let zones = Set(recordsToSave.map(\.recordID.zoneID.zoneName) + recordIDsToDelete.map(\.zoneID.zoneName))
            throw await encryptedDataResetZones(after: [error]).isDisjoint(with: zones) ? error : error.markedAsEncryptedDataReset
        }
        var saveResults: [CKRecord.ID: Result<CKRecord, any Error>] = [:]
        for record in recordsToSave {
            switch results.saveResults[record.recordID.nimbus] {
            case .success(let saved)?: saveResults[record.recordID] = .success(CKRecord.make(saved))
            case .failure(let error)?: saveResults[record.recordID] = .failure(CKError(error))
            case nil: saveResults[record.recordID] = .failure(CKError(.internalError, message: "no result"))
            }
        }
        var deleteResults: [CKRecord.ID: Result<Void, any Error>] = [:]
        for id in recordIDsToDelete {
            switch results.deleteResults[id.nimbus] {
            case .success?: deleteResults[id] = .success(())
            case .failure(let error)?: deleteResults[id] = .failure(CKError(error))
            case nil: deleteResults[id] = .failure(CKError(.internalError, message: "no result"))
            }
        }
        return (await markingEncryptedDataReset(saveResults), await markingEncryptedDataReset(deleteResults))
    }

    /// `results` with each ``CKError/Code/zoneNotFound`` of a zone an encrypted-data reset
    /// deleted marked with ``CKErrorUserDidResetEncryptedDataKey``, as CloudKit marks it.
    func markingEncryptedDataReset<T: Sendable>(
        _ results: [CKRecord.ID: Result<T, any Error>]
    ) async -> [CKRecord.ID: Result<T, any Error>] {
        let failures = results.compactMap { id, result -> (CKRecord.ID, CKError)? in
            guard case .failure(let error as CKError) = result else { return nil }
            return (id, error)
        }
        let reset = await encryptedDataResetZones(after: failures.map(\.1))
        var marked = results
        for (id, error) in failures where reset.contains(id.zoneID.zoneName) {
            marked[id] = .failure(error.markedAsEncryptedDataReset)
        }
        return marked
    }

    /// The private zones an encrypted-data reset deleted, asked of the server only when one of
    /// `errors` is ``CKError/Code/zoneNotFound`` (else none).
    func encryptedDataResetZones(after errors: [CKError]) async -> Set<String> {
        guard databaseScope == .private, errors.contains(where: { $0.code == .zoneNotFound }),
            let container = nimbus?.container, let keys = container.encryption
        else { return [] }
        return (try? await keys.resetZoneNames(in: container)) ?? []
    }
}
