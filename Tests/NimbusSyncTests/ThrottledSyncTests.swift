import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusServer
import NimbusStore
import NimbusSync
import Testing

/// The engine against a real server's rate limits: THROTTLED answers are waited out for the
/// `retryAfter` the server gives (on the engine's injected clock, which here moves the
/// server's clock: no real waiting), and nothing is lost.
@Suite struct ThrottledSyncTests {
    static let configuration = SyncConfiguration(zones: ["ReadingList"], subscriptionID: nil, batchSize: 5)

    func bookmark(_ name: String) -> LocalRecord {
        LocalRecord(zoneName: "ReadingList", recordName: name, recordType: "Bookmark", fields: ["title": .string(name)])
    }

    @Test func theEngineWaitsOutThrottlingAndEveryChangeArrives() async throws {
        let serverClock = ManualWallClock(millis: 1_800_000_000_000)
        try await SyncHarness.with(configure: {
            $0.clock = serverClock.wallClock
            // 4 requests at once, then one a second: far fewer than the engines send.
            $0.throttle.defaults.userRate = 1
            $0.throttle.defaults.userBurst = 4
        }) { harness in
            let waits = NIOLockedValueBox<[Duration]>([])
            let clock = SyncClock(
                sleep: { duration in
                    try Task.checkCancellation()
                    waits.withLockedValue { $0.append(duration) }
                    serverClock.advance(by: duration)  // the wait, as the server sees it
                }, random: { 0 })
            func engine(_ device: String) throws -> SyncEngine {
                SyncEngine(
                    service: DatabaseSyncService(database: harness.container(device: device).privateCloudDatabase),
                    store: try LocalStore(path: harness.storePath(device), clock: clock), configuration: Self.configuration)
            }
            let a = try engine("A")
            try await a.start()
            try a.store.write { _, outbox in
                for index in 0..<30 { try outbox.save(bookmark("r\(index)")) }
            }
            try await a.sendChanges()  // 6 batches of 5
            #expect(try a.store.pendingCount() == 0)

            let b = try engine("B")
            try await b.start()
            #expect(try b.store.records(inZone: "ReadingList").count == 30)
            // The server's retryAfter (whole seconds) was waited, not the policy's 50 ms backoff.
            let throttledWaits = waits.withLockedValue { $0 }.filter { $0 >= .seconds(1) }
            #expect(throttledWaits.count >= 5, "waits: \(waits.withLockedValue { $0 })")
        }
    }
}
