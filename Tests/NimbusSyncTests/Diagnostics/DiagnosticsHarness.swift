import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusSync

/// A clock the test moves by hand: the store's and the engine's time, so ages are exact.
final class ManualClock: Sendable {
    private let time = NIOLockedValueBox(Date(timeIntervalSince1970: 1_800_000_000))

    var now: Date { time.withLockedValue { $0 } }

    func advance(seconds: Double) {
        time.withLockedValue { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Waits for nothing (as ``SyncHarness/noWaiting``), reads this clock.
    var syncClock: SyncClock {
        SyncClock(sleep: SyncHarness.noWaiting.sleep, random: { 0.5 }, now: { [time] in time.withLockedValue { $0 } })
    }
}

extension SyncHarness {
    /// An engine for `device` whose store and engine read `clock`.
    func engine(
        _ device: String, configuration: SyncConfiguration, clock: ManualClock
    ) throws -> (SyncEngine, FaultyService) {
        let service = FaultyService(
            base: DatabaseSyncService(database: container(device: device).privateCloudDatabase), seed: 1)
        let store = try LocalStore(path: storePath(device), clock: clock.syncClock)
        return (SyncEngine(service: service, store: store, configuration: configuration), service)
    }
}

func bookmark(_ name: String, _ title: String, type: String = "Bookmark") -> LocalRecord {
    LocalRecord(zoneName: "ReadingList", recordName: name, recordType: type, fields: ["title": .string(title)])
}
