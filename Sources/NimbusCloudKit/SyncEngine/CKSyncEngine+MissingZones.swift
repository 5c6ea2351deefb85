import Foundation
import Nimbus

extension CKSyncEngine {
    typealias RecordResults = (
        saveResults: [CKRecord.ID: Result<CKRecord, any Error>], deleteResults: [CKRecord.ID: Result<Void, any Error>]
    )

    /// Sends one request of a batch. New records (none has a change tag yet) sent to a custom
    /// zone of the private database that does not exist create that zone and are sent once
    /// more, as CloudKit's sync engine does: the first send of Apple's sync-engine sample,
    /// whose tests delete the zone before each one, saves its contacts with no
    /// `zoneNotFound`. A record the server already had (it has a change tag) still fails with
    /// `zoneNotFound`, for the app to recover (another device deleted the zone), as does every
    /// record of a zone that an encrypted-data reset deleted. Creating the zone is part of the
    /// send: no ``Event/sentDatabaseChanges(_:)`` reports it; a fetch sees the new zone.
    func modifyRecordsCreatingNewZones(
        saving saves: [CKRecord], deleting deletes: [CKRecord.ID], atomically: Bool
    ) async throws -> RecordResults {
        let results: RecordResults
        do {
            results = try await database.modifyRecords(
                saving: saves, deleting: deletes, savePolicy: .ifServerRecordUnchanged, atomically: atomically)
        } catch let error as CKError where error.code == .zoneNotFound {
            // The request failed as a whole: every zone in it must be one the engine may create.
            let zones = Set(saves.map(\.recordID.zoneID) + deletes.map(\.zoneID))
            guard Self.missingZone(error), zones == creatableZones(saves: saves, deletes: deletes, failed: { _ in true }),
                try await createZones(zones)
            else { throw error }
            return try await database.modifyRecords(
                saving: saves, deleting: deletes, savePolicy: .ifServerRecordUnchanged, atomically: atomically)
        }
        let zones = creatableZones(saves: saves, deletes: deletes) { id in
            guard case .failure(let error as CKError)? = results.saveResults[id] else { return false }
            return Self.missingZone(error)
        }
        guard !zones.isEmpty, try await createZones(zones) else { return results }
        // Those zones' saves all failed (a missing zone fails every record in it): send them again.
        let again = saves.filter { zones.contains($0.recordID.zoneID) }
        let retried = try await database.modifyRecords(
            saving: again, deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: atomically)
        return (results.saveResults.merging(retried.saveResults) { $1 }, results.deleteResults)
    }

    /// `zoneNotFound` for a zone that is simply missing (not one an encrypted-data reset deleted).
    private static func missingZone(_ error: CKError) -> Bool {
        error.code == .zoneNotFound && !error.userDidResetEncryptedData
    }

    /// The zones of `saves` the engine may create: custom zones of the private database with
    /// no deletion in the request, whose every record is new and one of them `failed` for a
    /// missing zone.
    private func creatableZones(
        saves: [CKRecord], deletes: [CKRecord.ID], failed: (CKRecord.ID) -> Bool
    ) -> Set<CKRecordZone.ID> {
        guard database.databaseScope == .private else { return [] }
        let deleted = Set(deletes.map(\.zoneID))
        var candidates = Set<CKRecordZone.ID>()
        var excluded = deleted
        for record in saves {
            let zone = record.recordID.zoneID
            if record.recordChangeTag != nil || zone.zoneName == CKRecordZone.ID.defaultZoneName {
                excluded.insert(zone)
            } else if failed(record.recordID) {
                candidates.insert(zone)
            }
        }
        return candidates.subtracting(excluded)
    }

    /// Saves `zones`; `false` when any of them could not be saved.
    private func createZones(_ zones: Set<CKRecordZone.ID>) async throws -> Bool {
        let ids = zones.sorted { $0.zoneName < $1.zoneName }
        do {
            let results = try await database.modifyRecordZones(saving: ids.map { CKRecordZone(zoneID: $0) }, deleting: [])
            return ids.allSatisfy { id in
                if case .success? = results.saveResults[id] { return true }
                return false
            }
        } catch let error as CKError where error.code != .operationCancelled {
            return false
        }
    }
}
