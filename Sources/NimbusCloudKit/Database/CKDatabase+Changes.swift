import Foundation
import Nimbus
import NimbusProtocol

extension CKDatabase {
    /// What changed in a zone (CloudKit's `CKDatabase.RecordZoneChange`).
    public enum RecordZoneChange {
        /// A record created or changed since the token.
        public struct Modification: Sendable {
            public let record: CKRecord
            public var recordID: CKRecord.ID { record.recordID }
        }

        /// A record deleted since the token.
        public struct Deletion: Sendable {
            public let recordID: CKRecord.ID
            public let recordType: CKRecord.RecordType
        }
    }

    /// What changed in the database's zones (CloudKit's `CKDatabase.DatabaseChange`).
    public enum DatabaseChange {
        /// A zone created, or whose records changed, since the token.
        public struct Modification: Sendable {
            public let zoneID: CKRecordZone.ID
        }

        /// A zone deleted since the token, and why.
        public struct Deletion: Sendable {
            /// Why a zone is gone.
            public enum Reason: Sendable, Hashable {
                /// The app deleted the zone (on this device or another).
                case deleted
                /// The zone was deleted with its history (the user cleared the app's data).
                /// Reported when the server says `purged`; nothing on `nimbus serve` purges a
                /// zone, so it is never reported against it.
                case purged
                /// The user reset their encrypted data (`EncryptionKeys.resetEncryptedData(in:)`):
                /// what the zone held cannot be read by anyone; upload the device's copies again.
                case encryptedDataReset
            }

            public let zoneID: CKRecordZone.ID
            public let reason: Reason
        }
    }

    /// One page of a zone's changes since `changeToken` (every record when `nil`).
    /// - Throws: ``CKError/Code/changeTokenExpired`` (fetch again with `nil`),
    ///   ``CKError/Code/zoneNotFound``.
    public func recordZoneChanges(
        inZoneWith zoneID: CKRecordZone.ID, since changeToken: CKServerChangeToken?,
        desiredKeys: [CKRecord.FieldKey]? = nil, resultsLimit: Int? = nil
    ) async throws -> (
        modificationResultsByID: [CKRecord.ID: Result<RecordZoneChange.Modification, any Error>],
        deletions: [RecordZoneChange.Deletion], changeToken: CKServerChangeToken, moreComing: Bool
    ) {
        let database = try configured()
        let page = try await mappingErrors {
            try await database.recordZoneChanges(
                inZoneWith: zoneID.nimbus, since: changeToken?.token, desiredKeys: desiredKeys, resultsLimit: resultsLimit)
        }
        return await Self.zoneChanges(page, of: database)
    }

    /// A Nimbus page as ``recordZoneChanges(inZoneWith:since:desiredKeys:resultsLimit:)``
    /// returns it (assets the app's records hold are downloaded).
    static func zoneChanges(_ page: RecordZoneChanges, of database: Database) async -> (
        modificationResultsByID: [CKRecord.ID: Result<RecordZoneChange.Modification, any Error>],
        deletions: [RecordZoneChange.Deletion], changeToken: CKServerChangeToken, moreComing: Bool
    ) {
        var modifications: [CKRecord.ID: Result<RecordZoneChange.Modification, any Error>] = [:]
        for record in page.modifications {
            let downloaded = await database.downloadingAssets(of: record)
            modifications[CKRecord.ID(record.id)] = .success(.init(record: CKRecord.make(downloaded)))
        }
        let deletions = page.deletions.map {
            RecordZoneChange.Deletion(recordID: CKRecord.ID($0.recordID), recordType: $0.recordType ?? "")
        }
        return (modifications, deletions, CKServerChangeToken(page.changeToken), page.moreComing)
    }

    /// One page of the zones that changed since `changeToken` (every zone when `nil`).
    public func databaseChanges(
        since changeToken: CKServerChangeToken?, resultsLimit: Int? = nil
    ) async throws -> (
        modifications: [DatabaseChange.Modification], deletions: [DatabaseChange.Deletion],
        changeToken: CKServerChangeToken, moreComing: Bool
    ) {
        let database = try configured()
        let page = try await mappingErrors {
            try await database.databaseChanges(since: changeToken?.token, resultsLimit: resultsLimit)
        }
        let reset = page.deletedZoneIDs.isEmpty ? [] : try await resetZoneNames()
        let deletions =
            page.deletedZoneIDs.map {
                DatabaseChange.Deletion(zoneID: local($0), reason: reset.contains($0.zoneName) ? .encryptedDataReset : .deleted)
            }
            + page.purgedZoneIDs.map { DatabaseChange.Deletion(zoneID: local($0), reason: .purged) }
        return (
            page.modifiedZoneIDs.map { DatabaseChange.Modification(zoneID: local($0)) }.filter { !isNimbusZone($0.zoneID) },
            deletions.filter { !isNimbusZone($0.zoneID) },
            CKServerChangeToken(page.changeToken), page.moreComing
        )
    }

    /// The private zones whose encrypted data the account reset (``EncryptionKeys/resetEncryptedData(in:)``):
    /// their deletion's reason is ``DatabaseChange/Deletion/Reason/encryptedDataReset``.
    private func resetZoneNames() async throws(CKError) -> Set<String> {
        let nimbus = try configured()
        guard databaseScope == .private, let keys = nimbus.container.encryption else { return [] }
        return try await mappingErrors { try await keys.resetZoneNames(in: nimbus.container) }
    }
}
