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
    /// Saves with locked semantics; each deletion carries the change tag of the copy the
    /// device saw, so a delete loses to a newer edit.
    func modify(saving: [Nimbus.Record], deleting: [Nimbus.Record.ID: String]) async throws -> (
        saveResults: [Nimbus.Record.ID: Result<Nimbus.Record, NimbusError>],
        deleteResults: [Nimbus.Record.ID: Result<Void, NimbusError>]
    )
}

/// The engine's view of a private database, through the SDK.
public struct DatabaseSyncService: SyncService {
    public let database: Nimbus.Database

    public init(database: Nimbus.Database) {
        self.database = database
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
        try await database.recordZoneChanges(inZoneWith: ZoneID(zoneName: zone), since: token)
    }

    public func modify(saving: [Nimbus.Record], deleting: [Nimbus.Record.ID: String]) async throws -> (
        saveResults: [Nimbus.Record.ID: Result<Nimbus.Record, NimbusError>],
        deleteResults: [Nimbus.Record.ID: Result<Void, NimbusError>]
    ) {
        try await database.modifyRecords(
            saving: saving, deleting: Array(deleting.keys), savePolicy: .ifServerRecordUnchanged, atomically: false,
            deleteChangeTags: deleting)
    }
}
