import Foundation
import Nimbus
import NimbusProtocol

/// What the engine needs from the server. ``DatabaseSyncService`` implements it with the
/// SDK; tests wrap it to drop, delay or throttle calls.
public protocol SyncService: Sendable {
    func currentUserRecordName() async throws -> String
    func createZones(_ names: [String]) async throws
    func saveSubscription(_ subscription: Subscription) async throws
    func databaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges
    func zoneChanges(_ zone: String, since token: ServerChangeToken?) async throws -> RecordZoneChanges
    /// ``zoneChanges(_:since:)``, asking also how many changes follow the page when
    /// `countingRemaining` (``RecordZoneChanges/remainingChanges``). The default asks
    /// without counting.
    func zoneChanges(_ zone: String, since token: ServerChangeToken?, countingRemaining: Bool) async throws
        -> RecordZoneChanges
    /// ``zoneChanges(_:since:countingRemaining:)`` in two steps, so that the engine asks for
    /// the next page while it reads this one (``RecordZoneChangesAnswer``). The default reads
    /// the page with ``zoneChanges(_:since:countingRemaining:)``.
    func zoneChangesAnswer(_ zone: String, since token: ServerChangeToken?, countingRemaining: Bool) async throws
        -> RecordZoneChangesAnswer
    /// Saves with locked semantics; each deletion carries the change tag of the copy the
    /// device saw, so a delete loses to a newer edit.
    func modify(saving: [Nimbus.Record], deleting: [Nimbus.Record.ID: String]) async throws -> (
        saveResults: [Nimbus.Record.ID: Result<Nimbus.Record, NimbusError>],
        deleteResults: [Nimbus.Record.ID: Result<Void, NimbusError>]
    )

    // MARK: Asset bytes

    /// Upload URLs (`assets/upload`) for asset files of `zone`'s records, one per entry, in order.
    func assetUploadURLs(zone: String, for fields: [AssetField]) async throws -> [URL]
    /// Uploads a file of `zone`'s record field `field` to an upload URL; `resuming` when an
    /// earlier run may have sent part of it (the server is asked how much it holds). Returns
    /// the upload's answer: an ``Asset`` whose receipt attaches it to the record (encrypted,
    /// with its `wrappingKey`, when the database encrypts assets).
    func uploadAsset(
        _ file: URL, for field: AssetField, zone: String, to url: URL, resuming: Bool,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> Nimbus.Asset
    /// Downloads an asset's bytes to `destination`, continuing a partial download.
    func downloadAsset(
        _ asset: Nimbus.Asset, to destination: URL, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws
    /// The server's current record (for fresh download URLs), or `nil` when it is gone.
    func lookup(zone: String, recordName: String) async throws -> Nimbus.Record?

    // MARK: The shared database

    /// `changes/database` in the shared database: the zones other users shared with this
    /// one that changed (or whose last share ended: deleted) since `token`.
    func sharedDatabaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges
    /// Saves a subscription in the shared database.
    func saveSharedSubscription(_ subscription: Subscription) async throws
    /// Adds the device's hops of traced changes to the server's traces (`traces/report`).
    func reportTraceSpans(_ spans: [TraceSpanReport]) async throws
    /// The zones whose encrypted data the account reset (their deletion's reason is
    /// ``ZoneDeletionReason/encryptedDataReset``).
    func encryptedDataResetZones() async throws -> Set<String>
}

extension SyncService {
    /// A service that does not count: the page comes without ``RecordZoneChanges/remainingChanges``.
    public func zoneChanges(_ zone: String, since token: ServerChangeToken?, countingRemaining: Bool) async throws
        -> RecordZoneChanges
    {
        try await zoneChanges(zone, since: token)
    }

    /// A service that answers with pages already read: the next page is asked for after
    /// this one is read.
    public func zoneChangesAnswer(_ zone: String, since token: ServerChangeToken?, countingRemaining: Bool) async throws
        -> RecordZoneChangesAnswer
    {
        RecordZoneChangesAnswer(try await zoneChanges(zone, since: token, countingRemaining: countingRemaining))
    }

    /// A service without a shared database (``SyncConfiguration/syncsSharedDatabase`` off).
    public func sharedDatabaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges {
        throw NimbusError(.invalidArguments, "this sync service does not reach a shared database")
    }

    public func saveSharedSubscription(_ subscription: Subscription) async throws {
        throw NimbusError(.invalidArguments, "this sync service does not reach a shared database")
    }

    /// A service that reaches no trace collector: the device's hops are not reported.
    public func reportTraceSpans(_ spans: [TraceSpanReport]) async throws {}

    /// A service without end-to-end encryption: no zone is ever reset.
    public func encryptedDataResetZones() async throws -> Set<String> { [] }
}

/// One asset field of a record an upload URL is asked for.
public struct AssetField: Sendable, Hashable {
    public var recordName: String
    public var recordType: String
    public var field: String
    /// For an upload that resumes: the encrypted-asset format it began in, which the
    /// engine keeps beside its upload URL (`nil`: the format this build writes).
    public var assetFormat: UInt8?

    public init(recordName: String, recordType: String, field: String, assetFormat: UInt8? = nil) {
        self.recordName = recordName
        self.recordType = recordType
        self.field = field
        self.assetFormat = assetFormat
    }
}

/// The engine's view of a private database (and of the container's shared database, for
/// the zones other users share: those named with their owner, ``ZoneID/localZoneName``),
/// through the SDK.
public struct DatabaseSyncService: SyncService {
    public let database: Nimbus.Database

    public init(database: Nimbus.Database) {
        self.database = database
    }

    public func reportTraceSpans(_ spans: [TraceSpanReport]) async throws {
        try await database.reportTraceSpans(spans)
    }

    public func encryptedDataResetZones() async throws -> Set<String> {
        try await database.container.encryption?.resetZoneNames(in: database.container) ?? []
    }

    /// The database a zone of the engine lives in, and its zone ID there.
    private func route(_ zone: String) -> (Nimbus.Database, ZoneID) {
        let zoneID = ZoneID(localZoneName: zone)
        return (zoneID.isSharedZone ? database.container.sharedCloudDatabase : database, zoneID)
    }

    public func sharedDatabaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges {
        try await database.container.sharedCloudDatabase.databaseChanges(since: token)
    }

    public func saveSharedSubscription(_ subscription: Subscription) async throws {
        _ = try await database.container.sharedCloudDatabase.save(subscription)
    }

    public func currentUserRecordName() async throws -> String {
        try await database.container.userRecordID().recordName
    }

    public func createZones(_ names: [String]) async throws {
        _ = try await database.modifyRecordZones(saving: names.map { RecordZone(zoneName: $0) }, deleting: [])
    }

    public func saveSubscription(_ subscription: Subscription) async throws {
        _ = try await database.save(subscription)
    }

    public func databaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges {
        try await database.databaseChanges(since: token)
    }

    public func zoneChanges(_ zone: String, since token: ServerChangeToken?) async throws -> RecordZoneChanges {
        try await zoneChanges(zone, since: token, countingRemaining: false)
    }

    public func zoneChanges(_ zone: String, since token: ServerChangeToken?, countingRemaining: Bool) async throws
        -> RecordZoneChanges
    {
        try await zoneChangesAnswer(zone, since: token, countingRemaining: countingRemaining).read()
    }

    public func zoneChangesAnswer(_ zone: String, since token: ServerChangeToken?, countingRemaining: Bool) async throws
        -> RecordZoneChangesAnswer
    {
        let (database, zoneID) = route(zone)
        return try await database.recordZoneChangesAnswer(
            inZoneWith: zoneID, since: token, countingRemaining: countingRemaining)
    }

    public func modify(saving: [Nimbus.Record], deleting: [Nimbus.Record.ID: String]) async throws -> (
        saveResults: [Nimbus.Record.ID: Result<Nimbus.Record, NimbusError>],
        deleteResults: [Nimbus.Record.ID: Result<Void, NimbusError>]
    ) {
        // A batch holds one zone's changes: the zone decides the database.
        let zoneID = saving.first?.id.zoneID ?? deleting.keys.first?.zoneID
        let target = zoneID?.isSharedZone == true ? database.container.sharedCloudDatabase : database
        return try await target.modifyRecords(
            saving: saving, deleting: Array(deleting.keys), savePolicy: .ifServerRecordUnchanged, atomically: false,
            deleteChangeTags: deleting)
    }

    public func assetUploadURLs(zone: String, for fields: [AssetField]) async throws -> [URL] {
        let (database, zoneID) = route(zone)
        let slots = fields.map {
            Nimbus.Database.AssetSlot(
                recordID: Nimbus.Record.ID(recordName: $0.recordName, zoneID: zoneID), recordType: $0.recordType,
                fieldName: $0.field)
        }
        var urls = try await database.requestUploadURLs(for: slots)
        return try slots.map { slot in
            guard let url = urls[slot]?.popLast() else {
                throw NimbusError(.serverRejectedRequest, "assets/upload answered fewer upload URLs than asked for")
            }
            return url
        }
    }

    public func uploadAsset(
        _ file: URL, for field: AssetField, zone: String, to url: URL, resuming: Bool,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> Nimbus.Asset {
        let (database, zoneID) = route(zone)
        let slot = Nimbus.Database.AssetSlot(
            recordID: Nimbus.Record.ID(recordName: field.recordName, zoneID: zoneID), recordType: field.recordType,
            fieldName: field.field)
        return Nimbus.Asset(
            serverValue: try await database.uploadAsset(
                file, for: slot, to: url, resuming: resuming, format: field.assetFormat, progress: progress))
    }

    public func downloadAsset(
        _ asset: Nimbus.Asset, to destination: URL, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws {
        try await database.download(asset, to: destination, progress: progress)
    }

    public func lookup(zone: String, recordName: String) async throws -> Nimbus.Record? {
        do {
            let (database, zoneID) = route(zone)
            return try await database.record(for: Nimbus.Record.ID(recordName: recordName, zoneID: zoneID))
        } catch let error as NimbusError where error.code == .unknownItem {
            return nil
        }
    }
}
