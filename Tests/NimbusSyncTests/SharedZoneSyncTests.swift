import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusProtocol
import Testing

@testable import NimbusSync

/// The engine with the shared database, against a scripted service: shared zones arrive
/// and leave while it runs, and a read-only participant's edits never loop.
@Suite("Shared zones in the sync engine")
struct SharedZoneSyncTests {
    static let albums = ZoneID(zoneName: "Albums", ownerRecordName: "_owner")

    @Test func aZoneSharedWithTheUserArrivesAndLeavesWithoutARelaunch() async throws {
        try await withEngine { engine, service in
            let events = engine.events()
            let shareEvents = engine.events()
            service.shareZone(Self.albums, records: [
                try Self.share(permission: .readWrite), try Self.photo("p1", caption: "Beach"),
            ])
            try await engine.start()
            let changed = try await firstEvent(shareEvents) { if case .shareChanged = $0 { true } else { false } }
            if case .shareChanged(let share) = changed {
                #expect(share.isZoneWide)
                #expect(share.currentUserParticipant?.permission == .readWrite)
            }
            let accepted = try await firstEvent(events) { if case .shareAccepted = $0 { true } else { false } }
            guard case .shareAccepted(zoneID: let zoneID) = accepted else { return }
            #expect(zoneID == Self.albums)
            let photos = try engine.store.records(inZone: Self.albums.localZoneName).filter { $0.recordType == "Photo" }
            #expect(photos.map(\.recordName) == ["p1"])
            #expect(photos.first?.isShared == true)
            #expect(photos.first?.zoneID == Self.albums)

            // The owner ends the share: the next fetch (a push) removes the zone's records.
            let revoked = engine.events()
            service.endShare(Self.albums)
            try await engine.fetchChanges()
            _ = try await firstEvent(revoked) { if case .shareRevoked(zoneID: Self.albums) = $0 { true } else { false } }
            #expect(try engine.store.records(inZone: Self.albums.localZoneName).isEmpty)
        }
    }

    @Test func aReadOnlyParticipantsEditIsRefusedLocally() async throws {
        try await withEngine { engine, service in
            service.shareZone(Self.albums, records: [
                try Self.share(permission: .readOnly), try Self.photo("p1", caption: "Beach"),
            ])
            try await engine.start()
            var photo = try #require(try engine.store.record(zone: Self.albums.localZoneName, name: "p1"))
            photo["caption"] = .string("Mine now")
            #expect {
                try engine.store.write { _, outbox in try outbox.save(photo) }
            } throws: { ($0 as? NimbusError)?.code == .permissionFailure }
            #expect(service.modifyCalls == 0)
        }
    }

    @Test func anEditTheServerRefusesIsQuarantinedAndNeverSentAgain() async throws {
        try await withEngine { engine, service in
            service.shareZone(Self.albums, records: [
                try Self.share(permission: .readWrite), try Self.photo("p1", caption: "Beach"),
            ])
            try await engine.start()
            // The owner made it read-only; this device has not fetched that yet.
            service.refuseWrites = true
            let events = engine.events()
            var photo = try #require(try engine.store.record(zone: Self.albums.localZoneName, name: "p1"))
            photo["caption"] = .string("Mine now")
            try engine.store.write { _, outbox in try outbox.save(photo) }
            try await engine.sendChanges()
            let sent = try await firstEvent(events) { if case .sent = $0 { true } else { false } }
            guard case .sent(_, _, let failed) = sent else { return }
            #expect(failed.map(\.error.code) == [.permissionFailure])
            // The device shows the server's copy again; nothing is left to send.
            #expect(try engine.store.record(zone: Self.albums.localZoneName, name: "p1")?["caption"] == .string("Beach"))
            try await engine.sendChanges()
            #expect(service.modifyCalls == 1)
        }
    }

    @Test func aCompleteListingRemovesZonesItNoLongerNames() {
        let other = ZoneID(zoneName: "Trips", ownerRecordName: "_owner")
        let plan = SharedZonePlanner.finish(listed: [Self.albums], ended: [], held: [Self.albums, other], complete: true)
        #expect(plan.fetch == [Self.albums])
        #expect(plan.remove == [other])
        let incremental = SharedZonePlanner.finish(listed: [], ended: [other], held: [Self.albums, other], complete: false)
        #expect(incremental.remove == [other])
        #expect(incremental.fetch.isEmpty)
    }

    @Test func sharedZonesAreNamedWithTheirOwner() {
        #expect(Self.albums.localZoneName == "Albums\u{1F}_owner")
        #expect(ZoneID(localZoneName: Self.albums.localZoneName) == Self.albums)
        #expect(ZoneID(localZoneName: "ReadingList") == ZoneID(zoneName: "ReadingList"))
    }

    // MARK: - Support

    func withEngine(_ body: (SyncEngine, ScriptedSharedService) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shared-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = SyncConfiguration(zones: [])
        configuration.syncsSharedDatabase = true
        let service = ScriptedSharedService()
        let engine = SyncEngine(
            service: service,
            store: try LocalStore(path: directory + "/local.sqlite", clock: SyncClock(sleep: { _ in await Task.yield() })),
            configuration: configuration)
        try await body(engine, service)
    }

    static func record(_ json: String) throws -> Nimbus.Record {
        try Nimbus.Record(systemFieldsData: Data(json.utf8))
    }

    static var zoneJSON: String { #""zoneID":{"zoneName":"Albums","ownerRecordName":"_owner"}"# }

    static func share(permission: Share.Participant.Permission) throws -> Nimbus.Record {
        try record(
            #"{"v":1,"recordName":"cloudkit.zoneshare","recordType":"cloudkit.share","recordChangeTag":"s1",\#(zoneJSON),"shareState":{"publicPermission":"NONE","participants":[],"currentUserParticipant":{"userIdentity":{"userRecordName":"_me"},"permission":"\#(permission.rawValue)","acceptanceStatus":"ACCEPTED","type":"PRIVATE_USER"}}}"#
        )
    }

    static func photo(_ name: String, caption: String) throws -> Nimbus.Record {
        var photo = try record(#"{"v":1,"recordName":"\#(name)","recordType":"Photo","recordChangeTag":"t1",\#(zoneJSON)}"#)
        photo["caption"] = caption
        photo.clearChangedKeys()
        return photo
    }
}

/// A shared database whose zones the test opens and ends; the private database is empty.
final class ScriptedSharedService: SyncService {
    private struct State {
        var version = 0
        var zones: [ZoneID: (records: [Nimbus.Record], changedAt: Int, ended: Bool)] = [:]
        var refuseWrites = false
        var modifyCalls = 0
    }
    private let state = NIOLockedValueBox(State())

    func shareZone(_ zoneID: ZoneID, records: [Nimbus.Record]) {
        state.withLockedValue { state in
            state.version += 1
            state.zones[zoneID] = (records, state.version, false)
        }
    }

    func endShare(_ zoneID: ZoneID) {
        state.withLockedValue { state in
            state.version += 1
            state.zones[zoneID]?.changedAt = state.version
            state.zones[zoneID]?.ended = true
        }
    }

    var refuseWrites: Bool {
        get { state.withLockedValue { $0.refuseWrites } }
        set { state.withLockedValue { $0.refuseWrites = newValue } }
    }

    var modifyCalls: Int { state.withLockedValue { $0.modifyCalls } }

    /// Tokens are opaque to apps; a double makes them from their Codable form (a string).
    static func token(_ text: String) -> ServerChangeToken {
        try! JSONDecoder().decode(ServerChangeToken.self, from: JSONEncoder().encode(text))
    }

    static func text(of token: ServerChangeToken) -> String {
        (try? JSONDecoder().decode(String.self, from: JSONEncoder().encode(token))) ?? ""
    }

    func currentUserRecordName() async throws -> String { "_me" }
    func createZones(_ names: [String]) async throws {}
    func saveSubscription(_ subscription: Subscription) async throws {}
    func saveSharedSubscription(_ subscription: Subscription) async throws {}

    func databaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges {
        DatabaseChanges(
            modifiedZoneIDs: [], deletedZoneIDs: [], purgedZoneIDs: [],
            changeToken: Self.token("private"), moreComing: false)
    }

    func sharedDatabaseChanges(since token: ServerChangeToken?) async throws -> DatabaseChanges {
        let since = token.flatMap { Int(Self.text(of: $0)) } ?? 0
        return state.withLockedValue { state in
            let changed = state.zones.filter { $0.value.changedAt > since }
            return DatabaseChanges(
                modifiedZoneIDs: changed.filter { !$0.value.ended }.map(\.key),
                deletedZoneIDs: changed.filter { $0.value.ended }.map(\.key), purgedZoneIDs: [],
                changeToken: Self.token(String(state.version)), moreComing: false)
        }
    }

    func zoneChanges(_ zone: String, since token: ServerChangeToken?) async throws -> RecordZoneChanges {
        let zoneID = ZoneID(localZoneName: zone)
        return try state.withLockedValue { state in
            guard let entry = state.zones[zoneID], !entry.ended else {
                throw NimbusError(.zoneNotFound, "no such zone", zoneID: zoneID)
            }
            // The whole zone from no token; nothing new after (the scripts never edit a zone).
            return RecordZoneChanges(
                modifications: token == nil ? entry.records : [], deletions: [],
                changeToken: Self.token("z"), moreComing: false)
        }
    }

    func modify(saving: [Nimbus.Record], deleting: [Nimbus.Record.ID: String]) async throws -> (
        saveResults: [Nimbus.Record.ID: Result<Nimbus.Record, NimbusError>],
        deleteResults: [Nimbus.Record.ID: Result<Void, NimbusError>]
    ) {
        let refuse = state.withLockedValue { state in
            state.modifyCalls += 1
            return state.refuseWrites
        }
        let error = NimbusError(.permissionFailure, "read-only participant")
        var saves: [Nimbus.Record.ID: Result<Nimbus.Record, NimbusError>] = [:]
        for record in saving { saves[record.id] = refuse ? .failure(error) : .success(record) }
        var deletes: [Nimbus.Record.ID: Result<Void, NimbusError>] = [:]
        for id in deleting.keys { deletes[id] = refuse ? .failure(error) : .success(()) }
        return (saves, deletes)
    }

    func assetUploadURLs(zone: String, for fields: [AssetField]) async throws -> [URL] { [] }
    func uploadAsset(
        _ file: URL, for field: AssetField, zone: String, to url: URL, resuming: Bool,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> Nimbus.Asset {
        throw NimbusError(.internalError, "no assets here")
    }
    func downloadAsset(
        _ asset: Nimbus.Asset, to destination: URL, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws {
        throw NimbusError(.internalError, "no assets here")
    }
    func lookup(zone: String, recordName: String) async throws -> Nimbus.Record? { nil }
}
