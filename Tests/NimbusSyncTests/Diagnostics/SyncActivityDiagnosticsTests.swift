import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import NimbusTestSupport
import Testing

/// The engine-wide and per-zone activity in ``SyncDiagnostics``: fetches and tokens,
/// subscriptions, the push channel, conflicts, throttling.
@Suite("Sync diagnostics: activity", .timeLimit(.minutes(10)))
struct SyncActivityDiagnosticsTests {
    static let zones = ["ReadingList", "ReadingHistory"]

    /// After a fetch: each zone's last fetch succeeded and its token is saved; the
    /// subscription is created (known after a relaunch). A failed fetch and an expired token
    /// are recorded.
    @Test func fetchesRecordTheirOutcomeAndTheTokenState() async throws {
        try await SyncHarness.with { harness in
            let clock = ManualClock()
            let configuration = SyncConfiguration(zones: Self.zones)
            let (a, service) = try harness.engine("A", configuration: configuration, clock: clock)
            let before = try await a.diagnostics()
            #expect(before.subscriptions.map(\.state) == [.missing])
            #expect(before.zones.map(\.name) == Self.zones)
            #expect(before.zones.allSatisfy { !$0.token.hasToken && $0.lastFetch == nil })

            try await a.start()
            let fetchedAt = clock.now
            clock.advance(seconds: 5)
            var diagnostics = try await a.diagnostics()
            #expect(diagnostics.lastDatabaseFetch?.at == fetchedAt)
            #expect(diagnostics.lastDatabaseFetch?.succeeded == true)
            #expect(diagnostics.subscriptions.first?.state == .created)
            #expect(diagnostics.subscriptions.first?.id == "nimbus-sync")
            #expect(diagnostics.subscriptions.first?.savedAt == fetchedAt)
            for zone in diagnostics.zones {
                #expect(zone.lastFetch?.succeeded == true)
                #expect(zone.token.hasToken)
                #expect(zone.token.savedAt == fetchedAt)
                #expect(zone.token.expiries == 0)
            }
            #expect(diagnostics.account != nil)

            // A zone fetch that fails, then an expired token: both recorded.
            service.fail("zoneChanges:ReadingList", with: NimbusError(.internalError, "injected", serverErrorCode: "INTERNAL_ERROR"))
            await #expect(throws: NimbusError.self) { try await a.refresh(zone: "ReadingList") }
            diagnostics = try await a.diagnostics()
            let failed = try #require(diagnostics.zones.first { $0.name == "ReadingList" }?.lastFetch)
            #expect(failed.at == clock.now)
            #expect(failed.error?.serverErrorCode == "INTERNAL_ERROR")
            service.fail("zoneChanges:ReadingList", with: nil)
            service.failNext("zoneChanges:ReadingList", with: NimbusError(.changeTokenExpired, "injected"))
            try await a.refresh(zone: "ReadingList")
            diagnostics = try await a.diagnostics()
            let zone = try #require(diagnostics.zones.first { $0.name == "ReadingList" })
            #expect(zone.token.expiries == 1)
            #expect(zone.lastFetch?.succeeded == true)

            // A relaunch knows the subscription, the tokens and the outcomes.
            let (relaunched, _) = try harness.engine("A", configuration: configuration, clock: clock)
            let again = try await relaunched.diagnostics()
            #expect(again.subscriptions.first?.state == .known)
            #expect(again.zones == diagnostics.zones)
            #expect(again.lastDatabaseFetch == diagnostics.lastDatabaseFetch)
        }
    }

    /// With a real ``PushClient``: connected since when, pushes received; then the server
    /// stops and the channel is reported down with its error and next attempt.
    @Test func thePushChannelsStateFollowsARealConnection() async throws {
        try await SyncHarness.with { harness in
            let clock = ManualClock()
            let (a, _) = try harness.engine("A", configuration: SyncConfiguration(zones: Self.zones), clock: clock)
            let (b, _) = try harness.engine("B", configuration: SyncConfiguration(zones: Self.zones), clock: clock)
            try await a.start()
            try await b.start()
            #expect(try await b.diagnostics().push == nil)
            let events = b.events()
            await b.listen(to: PushClient(container: harness.container(device: "B")))
            _ = try await firstEvent(events) { if case .pushConnectionChanged(let state) = $0 { return state.isConnected } else { return false } }
            var push = try #require(try await b.diagnostics().push)
            #expect(push.isConnected)
            #expect(push.since == clock.now)
            #expect(push.reconnects == 0)

            // A push arrives: B fetches A's save.
            clock.advance(seconds: 2)
            try a.store.write { _, outbox in try outbox.save(bookmark("pushed", "hello")) }
            try await a.sendChanges()
            _ = try await firstEvent(events) { event in
                if case .fetched(_, let saved, _) = event { return saved.contains { $0.recordName == "pushed" } }
                return false
            }
            push = try #require(try await b.diagnostics().push)
            #expect(push.pushesReceived >= 1)
            #expect(push.lastPushAt == clock.now)

            clock.advance(seconds: 3)
            try await harness.server.stop()
            _ = try await firstEvent(events) { if case .pushConnectionChanged(let state) = $0 { return !state.isConnected } else { return false } }
            push = try #require(try await b.diagnostics().push)
            #expect(!push.isConnected)
            #expect(push.since == clock.now)
            #expect(push.lastError != nil)
            #expect(push.nextAttemptAt.map { $0 > clock.now } == true)
            await b.stopListening()
            #expect(try await b.diagnostics().push == nil)
        }
    }

    /// Two devices edit the same field: the merge's decision is counted by outcome and the
    /// record listed with it.
    @Test func conflictsAreCountedWithTheirOutcome() async throws {
        try await SyncHarness.with { harness in
            let configuration = SyncConfiguration(
                zones: Self.zones, subscriptionID: nil, defaultMergeRules: MergeRules(defaultPolicy: .serverWins))
            let (a, _) = try harness.engine("A", configuration: configuration)
            let (b, _) = try harness.engine("B", configuration: configuration)
            try await a.start()
            try await b.start()
            try a.store.write { _, outbox in try outbox.save(bookmark("shared", "first")) }
            try await a.sendChanges()
            try await b.fetchChanges()
            try a.store.write { _, outbox in try outbox.save(bookmark("shared", "A's title")) }
            try b.store.write { _, outbox in try outbox.save(bookmark("shared", "B's title")) }
            try await a.sendChanges()
            try await b.sendChanges()

            let conflicts = try await b.diagnostics().conflicts
            #expect(conflicts.count == 1)
            #expect(conflicts.fieldsByWinner == ["server": 1])
            let recent = try #require(conflicts.recent.first)
            #expect(recent.recordName == "shared")
            #expect(recent.resolutions.map(\.field) == ["title"])
            #expect(recent.resolutions.first?.lostValue?.contains("B's title") == true)
            #expect(try b.store.record(zone: "ReadingList", name: "shared")?.fields["title"] == "A's title")
            #expect(try await a.diagnostics().conflicts.count == 0)
        }
    }

    /// THROTTLED with a retryAfter: the engine waits it out and reports when and for how long;
    /// the send succeeds after the wait, and a relaunch still shows the last throttling.
    @Test func throttlingIsReportedWithTheBackoffInForce() async throws {
        try await SyncHarness.with { harness in
            let clock = ManualClock()
            let configuration = SyncConfiguration(zones: Self.zones, subscriptionID: nil)
            let (a, service) = try harness.engine("A", configuration: configuration, clock: clock)
            try await a.start()
            try a.store.write { _, outbox in try outbox.save(bookmark("slow", "throttled once")) }
            service.failNext(
                "modify",
                with: NimbusError(.requestRateLimited, "slow down", retryAfterSeconds: 30, serverErrorCode: "THROTTLED", httpStatus: 429))
            try await a.sendChanges()
            #expect(try a.store.pendingCount() == 0)

            let throttling = try await a.diagnostics().throttling
            #expect(throttling.throttledCount == 1)
            #expect(throttling.lastThrottledAt == clock.now)
            #expect(throttling.lastRetryAfterSeconds == 30)
            #expect(throttling.backoffUntil == clock.now.addingTimeInterval(30))
            #expect(throttling.backoffError?.serverErrorCode == "THROTTLED")
            #expect(throttling.isBackingOff(at: clock.now))
            clock.advance(seconds: 31)
            #expect(!throttling.isBackingOff(at: clock.now))

            let (relaunched, _) = try harness.engine("A", configuration: configuration, clock: clock)
            #expect(try await relaunched.diagnostics().throttling == throttling)
            let zone = try #require(try await relaunched.diagnostics().zones.first { $0.name == "ReadingList" })
            #expect(zone.lastSend?.succeeded == true)
        }
    }
}
