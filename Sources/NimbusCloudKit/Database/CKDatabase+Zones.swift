import Foundation
import Nimbus
import NimbusProtocol

extension CKDatabase {
    /// Every zone of the database.
    public func allRecordZones() async throws -> [CKRecordZone] {
        let database = try configured()
        return try await mappingErrors { try await database.allRecordZones().map(local) }.filter { !isNimbusZone($0.zoneID) }
    }

    /// Nimbus's own zone of the user's encryption keys (`EncryptionKeys.keysZoneName`), which
    /// CloudKit's API does not show: CloudKit keeps its keys in iCloud Keychain, outside the
    /// database, so code written for CloudKit (a sync engine fetching every zone, a test
    /// deleting every zone) never meets them.
    func isNimbusZone(_ zoneID: CKRecordZone.ID) -> Bool {
        databaseScope == .private && zoneID.zoneName == EncryptionKeys.keysZoneName
    }

    /// One zone.
    /// - Throws: ``CKError/Code/zoneNotFound``.
    public func recordZone(for zoneID: CKRecordZone.ID) async throws -> CKRecordZone {
        let database = try configured()
        return try await mappingErrors { local(try await database.recordZone(for: zoneID.nimbus)) }
    }

    /// Several zones, each with its own result.
    public func recordZones(
        for ids: [CKRecordZone.ID]
    ) async throws -> [CKRecordZone.ID: Result<CKRecordZone, any Error>] {
        var results: [CKRecordZone.ID: Result<CKRecordZone, any Error>] = [:]
        for id in ids {
            do { results[id] = .success(try await recordZone(for: id)) } catch let error as CKError
                where error.code == .zoneNotFound
            {
                results[id] = .failure(error)
            }
        }
        return results
    }

    /// Creates a zone (saving an existing zone changes nothing).
    @discardableResult
    public func save(_ zone: CKRecordZone) async throws -> CKRecordZone {
        let (saveResults, _) = try await modifyRecordZones(saving: [zone], deleting: [])
        guard let result = saveResults[zone.zoneID] else {
            throw CKError(.internalError, message: "the server returned no result for zone \(zone.zoneID.zoneName)")
        }
        return try result.get()
    }

    /// Deletes a zone and every record in it.
    @discardableResult
    public func deleteRecordZone(withID zoneID: CKRecordZone.ID) async throws -> CKRecordZone.ID {
        let (_, deleteResults) = try await modifyRecordZones(saving: [], deleting: [zoneID])
        guard let result = deleteResults[zoneID] else {
            throw CKError(.internalError, message: "the server returned no result for zone \(zoneID.zoneName)")
        }
        try result.get()
        return zoneID
    }

    /// Creates and deletes zones, with each item's result.
    public func modifyRecordZones(
        saving recordZonesToSave: [CKRecordZone], deleting recordZoneIDsToDelete: [CKRecordZone.ID]
    ) async throws -> (
        saveResults: [CKRecordZone.ID: Result<CKRecordZone, any Error>],
        deleteResults: [CKRecordZone.ID: Result<Void, any Error>]
    ) {
        let database = try configured()
        let results = try await mappingErrors {
            try await database.modifyRecordZones(
                saving: recordZonesToSave.map { RecordZone(zoneID: $0.zoneID.nimbus) },
                deleting: recordZoneIDsToDelete.map(\.nimbus))
        }
        var saveResults: [CKRecordZone.ID: Result<CKRecordZone, any Error>] = [:]
        for zone in recordZonesToSave {
            saveResults[zone.zoneID] =
                results.saveResults[zone.zoneID.nimbus].map { $0.map(local).mapError { CKError($0) as any Error } }
                ?? .failure(CKError(.internalError, message: "no result"))
        }
        var deleteResults: [CKRecordZone.ID: Result<Void, any Error>] = [:]
        for id in recordZoneIDsToDelete {
            deleteResults[id] =
                results.deleteResults[id.nimbus].map { $0.mapError { CKError($0) as any Error } }
                ?? .failure(CKError(.internalError, message: "no result"))
        }
        return (saveResults, deleteResults)
    }
}
