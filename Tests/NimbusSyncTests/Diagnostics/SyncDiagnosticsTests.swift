import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import NimbusTestSupport
import Testing

/// "Why didn't it sync?" on the device: ``SyncEngine/diagnostics(pendingLimit:)`` against a
/// real server, through the engine's public API.
@Suite("Sync diagnostics", .timeLimit(.minutes(10)))
struct SyncDiagnosticsTests {
    static let zones = ["ReadingList", "ReadingHistory"]

    /// A send that cannot reach the server leaves the change in the outbox with its age, its
    /// attempts and the error, and the zone's last send failed; a new engine on the same
    /// store file (a relaunch) reports the same.
    @Test func aSendToAStoppedServerKeepsTheEntryWithItsAgeAttemptsAndError() async throws {
        try await SyncHarness.with { harness in
            let clock = ManualClock()
            let configuration = SyncConfiguration(zones: Self.zones, subscriptionID: nil)
            let (a, _) = try harness.engine("A", configuration: configuration, clock: clock)
            try await a.start()
            try a.store.write { _, outbox in try outbox.save(bookmark("offline", "written offline")) }
            clock.advance(seconds: 90)
            try await harness.server.stop()
            await #expect(throws: NimbusError.self) { try await a.sendChanges() }

            for engine in [a, try harness.engine("A", configuration: configuration, clock: clock).0] {
                let diagnostics = try await engine.diagnostics()
                let zone = try #require(diagnostics.zones.first { $0.name == "ReadingList" })
                #expect(zone.pendingCount == 1)
                let entry = try #require(zone.pending.first)
                #expect(entry.recordName == "offline")
                #expect(entry.kind == .save)
                #expect(entry.ageSeconds == 90)
                #expect(entry.attempts == 1)
                let error = try #require(entry.lastError)
                #expect([NimbusError.Code.networkFailure, .networkUnavailable].contains(error.nimbusCode))
                #expect(entry.lastAttemptAt == clock.now)
                #expect(zone.lastSend?.succeeded == false)
                #expect(zone.lastSend?.error?.code == error.code)
                #expect(diagnostics.pendingCount == 1)
            }
        }
    }

    /// A change the server refuses for good (a save without a record type: the server refuses
    /// the whole request, naming the record) is not sent again and not dropped: it is given up
    /// with the server's error, reported as an event, listed, counted, kept across a relaunch;
    /// the rest of its batch goes out; retried as it is, it is refused again; discarded, gone.
    @Test func aChangeTheServerRefusesIsGivenUpReportedListedAndRetried() async throws {
        try await SyncHarness.with { harness in
            let configuration = SyncConfiguration(zones: Self.zones, subscriptionID: nil)
            let (a, service) = try harness.engine("A", configuration: configuration)
            try await a.start()
            let events = a.events()
            try a.store.write { _, outbox in
                try outbox.save(bookmark("fine", "a good one"))
                try outbox.save(bookmark("untyped", "no record type", type: ""))
            }
            try await a.sendChanges()

            let event = try await firstEvent(events) { if case .gaveUp = $0 { return true } else { return false } }
            guard case .gaveUp(let changes) = event else { return }
            let change = try #require(changes.first)
            #expect(changes.count == 1)
            #expect(change.change.recordName == "untyped")
            #expect(change.reason == .rejected)
            #expect(change.error?.serverErrorCode == "BAD_REQUEST")
            #expect(change.error?.nimbusCode == .invalidArguments)
            #expect(change.attempts == 1)

            #expect(try a.store.pendingCount() == 0)
            #expect(try a.store.record(zone: "ReadingList", name: "untyped") == nil)
            #expect(try a.store.givenUp().map(\.id) == [change.id])
            let diagnostics = try await a.diagnostics()
            #expect(diagnostics.givenUp.map(\.recordName) == ["untyped"])
            #expect(diagnostics.givenUp.first?.error?.serverErrorCode == "BAD_REQUEST")
            #expect(diagnostics.quarantine.byReason["rejected"] == 1)
            #expect(diagnostics.quarantine.records == [LocalRecordID(zoneName: "ReadingList", recordName: "untyped")])
            // Not sent again by later sends.
            let sends = service.calls("modify")
            try await a.sendChanges()
            #expect(service.calls("modify") == sends)

            // Survives a relaunch.
            let (relaunched, _) = try harness.engine("A", configuration: configuration)
            #expect(try await relaunched.diagnostics().givenUp.map(\.id) == [change.id])

            // Retried as it was, it is refused again and given up again (with a new ID).
            let again = relaunched.events()
            try await relaunched.retry(givenUp: [change.id])
            let second = try await firstEvent(again) { if case .gaveUp = $0 { return true } else { return false } }
            guard case .gaveUp(let secondChanges) = second else { return }
            let secondID = try #require(secondChanges.first?.id)
            #expect(secondID != change.id)
            #expect(try relaunched.store.givenUp().map(\.id) == [secondID])

            // Unknown IDs are a clear error, and change nothing.
            #expect(throws: NimbusError.self) { try relaunched.store.retryGivenUp([secondID, 999_999]) }
            #expect(try relaunched.store.givenUp().count == 1)

            // Discarded: gone for good.
            try relaunched.store.discardGivenUp([secondID])
            #expect(try relaunched.store.givenUp().isEmpty)
            #expect(try await relaunched.diagnostics().quarantine.count == 0)
        }
    }

    /// A given-up change the server would take goes out when retried: a share's read-only
    /// refusal stands for every refusal the user can fix (here the zone is discarded, then the
    /// change is retried into the zone recreated).
    @Test func aGivenUpChangeOfADiscardedZoneIsRetriedIntoTheZone() async throws {
        try await SyncHarness.with { harness in
            let configuration = SyncConfiguration(zones: Self.zones, subscriptionID: nil, zoneLossPolicy: .discardLocal)
            let (a, _) = try harness.engine("A", configuration: configuration)
            try await a.start()
            let events = a.events()
            try a.store.write { _, outbox in try outbox.save(bookmark("kept", "edited before the zone went")) }
            _ = try await harness.container(device: "admin").privateCloudDatabase.deleteRecordZone(
                withID: ZoneID(zoneName: "ReadingList"))
            try await a.fetchChanges()
            let event = try await firstEvent(events) { if case .gaveUp = $0 { return true } else { return false } }
            guard case .gaveUp(let changes) = event else { return }
            #expect(changes.map(\.reason) == [.zoneDiscarded])
            #expect(changes.first?.change.fields["title"] == "edited before the zone went")

            _ = try await harness.container(device: "admin").privateCloudDatabase.modifyRecordZones(
                saving: [RecordZone(zoneName: "ReadingList")], deleting: [])
            try await a.retry(givenUp: changes.map(\.id))
            #expect(try a.store.givenUp().isEmpty)
            #expect(try a.store.pendingCount() == 0)
            let server = try await harness.container(device: "admin").privateCloudDatabase.record(
                for: Nimbus.Record.ID(recordName: "kept", zoneID: ZoneID(zoneName: "ReadingList")))
            #expect(server.fieldValue(forKey: "title") == "edited before the zone went")
        }
    }

    /// A sign-out sets the account's pending changes aside: reported with their reason; only
    /// that account may send them again.
    @Test func anAccountChangeGivesUpThePendingChangesWithTheirReason() async throws {
        try await SyncHarness.with { harness in
            let (a, _) = try harness.engine("A", configuration: SyncConfiguration(zones: Self.zones, subscriptionID: nil))
            try await a.start()
            let user = try #require(try await a.diagnostics().account)
            let events = a.events()
            try a.store.write { _, outbox in try outbox.save(bookmark("mine", "unsent")) }
            try await a.signOut()
            let event = try await firstEvent(events) { if case .gaveUp = $0 { return true } else { return false } }
            guard case .gaveUp(let changes) = event else { return }
            #expect(changes.map(\.reason) == [.accountChanged])
            #expect(changes.map(\.change.recordName) == ["mine"])
            #expect(changes.map(\.account) == [user])
            #expect(throws: NimbusError.self) { try a.store.retryGivenUp(changes.map(\.id)) }
            let diagnostics = try await a.diagnostics()
            #expect(diagnostics.account == nil)
            #expect(diagnostics.givenUp.map(\.reason) == [.accountChanged])
            #expect(diagnostics.pendingCount == 0)
        }
    }
}
