import Foundation
import Nimbus
import NimbusProtocol

/// One database of a container: public, the user's private one, or the records others
/// shared with the user. Its async methods send requests and return when they answer; its
/// completion-handler methods do the same on a task; ``add(_:)`` runs operations.
///
/// Failures are ``CKError``s, as CloudKit reports them.
public final class CKDatabase: NSObject, Sendable {
    /// Which database.
    public enum Scope: Int, Sendable, Hashable {
        case `public` = 1
        case `private` = 2
        case shared = 3
    }

    public let databaseScope: Scope
    /// The SDK database; `nil` when no server is configured.
    let nimbus: Database?

    init(_ nimbus: Database?, scope: Scope) {
        self.nimbus = nimbus
        self.databaseScope = scope
    }

    /// The SDK database, or ``CKError/Code/badContainer`` when no server is configured.
    func configured() throws(CKError) -> Database {
        guard let nimbus else { throw CKError.notConfigured }
        return nimbus
    }

    /// A zone ID the server sent, as CloudKit names it: in the private database every zone is
    /// the current user's, so its owner is ``CKCurrentUserDefaultName``.
    func local(_ zoneID: ZoneID) -> CKRecordZone.ID {
        databaseScope == .private ? CKRecordZone.ID(zoneName: zoneID.zoneName) : CKRecordZone.ID(zoneID)
    }

    /// A zone the server sent, named as CloudKit names it (see the zone ID's `local`).
    func local(_ zone: RecordZone) -> CKRecordZone {
        let zoneID = local(zone.zoneID)
        return CKRecordZone(
            zoneID: zoneID,
            share: zone.shareRecordID.map { CKRecord.Reference(recordID: CKRecord.ID(recordName: $0.recordName, zoneID: zoneID), action: .none) })
    }

    /// Runs an operation against this database on a queue of the database's own (a
    /// long-lived operation that runs already, handed back by
    /// ``CKContainer/longLivedOperation(for:)``, is left running).
    public func add(_ operation: CKDatabaseOperation) {
        guard !LongLivedOperations.isRunning(operation) else { return }
        operation.database = self
        Self.queue.addOperation(operation)
    }

    /// Where ``add(_:)`` runs operations (CloudKit runs them on queues of its own too).
    static let queue: OperationQueue = {
        let queue = OperationQueue()
        queue.name = "NimbusCloudKit.CKDatabase"
        return queue
    }()

    public override var description: String { "<CKDatabase: \(databaseScope)>" }
}

extension Database {
    /// Downloads the bytes of the fetched record's assets into the asset cache (those not
    /// there yet), as CloudKit downloads a record's assets with it. A failed download leaves
    /// the asset without a file; the record is still returned.
    func downloadingAssets(of record: Record) async -> Record {
        for key in record.allKeys {
            for asset in record.fieldValue(forKey: key)?.sdkAssets ?? [] where !asset.needsUpload {
                guard AssetCache.file(for: asset) == nil, let target = AssetCache.location(for: asset) else { continue }
                try? FileManager.default.createDirectory(at: AssetCache.directory, withIntermediateDirectories: true)
                _ = try? await download(asset, to: target)
            }
        }
        return record
    }
}
