import Foundation
import NimbusProtocol
import NimbusStore

/// Grows one spread's records straight through the store (no HTTP: the probes measure the
/// requests), in transactions of at most 200 records, `writers` at a time.
struct GrowthData {
    let store: any NimbusStorage
    let spread: GrowthSpread
    let writers: Int
    private(set) var targets: [GrowthTarget] = []
    /// Records the probes created over HTTP (in the probe zone), counted as live.
    var probeRecords = 0

    /// Records the probe zone holds of its own before the spread grows.
    static let probeZoneRecords = 2_000

    init(store: any NimbusStorage, spread: GrowthSpread, writers: Int, container: String, probeUser: String) {
        self.store = store
        self.spread = spread
        self.writers = writers
        targets = (0..<spread.targets).map { index in
            let owner = spread.owner(index, probeUser: probeUser)
            return GrowthTarget(
                database: DatabaseKey(container: container, environment: .development, scope: .private, owner: owner),
                zone: spread.zoneName(index), caller: Caller(userRecordName: owner, deviceID: "nimbus-bench-growth"))
        }
        // The probe zone's own records are never deleted: the range query's first page is theirs.
        targets[0].nextToDelete = Self.probeZoneRecords
    }

    var live: Int { targets.reduce(0) { $0 + $1.next - $1.nextToDelete } + Self.probeZoneRecords + probeRecords }

    /// Creates every target's zone (each target is a zone of its own), and the probe zone's
    /// own records.
    mutating func prepare() async throws {
        for target in targets {
            _ = try await store.modifyZones([.create(zoneName: target.zone)], in: target.database)
        }
        try await create([0: 0..<Self.probeZoneRecords])
        targets[0].next = Self.probeZoneRecords
        targets[0].nextToDelete = Self.probeZoneRecords
    }

    /// Adds records evenly over the targets until `size` records are live; records per second.
    mutating func grow(to size: Int) async throws -> Double {
        let adding = size - live
        guard adding > 0 else { return 0 }
        var plan: [Int: Range<Int>] = [:]
        for index in targets.indices {
            let share = adding / targets.count + (index < adding % targets.count ? 1 : 0)
            guard share > 0 else { continue }
            plan[index] = targets[index].next..<(targets[index].next + share)
        }
        let start = ContinuousClock.now
        try await create(plan)
        for (index, range) in plan { targets[index].next = range.upperBound }
        return Double(adding) / (ContinuousClock.now - start).seconds
    }

    /// Deletes `count` records spread over the targets (oldest first), leaving tombstones;
    /// the records deleted (fewer only when the targets hold fewer).
    mutating func deleteSome(_ count: Int) async throws -> Int {
        let share = max(1, (count + targets.count - 1) / targets.count)
        var deleted = 0
        var progressed = true
        while deleted < count, progressed {
            progressed = false
            for index in targets.indices where deleted < count {
                let target = targets[index]
                let take = min(target.next - target.nextToDelete, share, count - deleted)
                guard take > 0 else { continue }
                let names = (target.nextToDelete..<(target.nextToDelete + take)).map { "b\($0)" }
                let outcome = try await store.modifyRecords(
                    names.map { RecordOperation(type: .forceDelete, record: Record(recordName: $0, recordType: "Note")) },
                    zone: target.zone, atomic: false, policy: Self.policy(), caller: target.caller, in: target.database)
                guard outcome.commit != nil else { throw BenchError("deleting growth records wrote nothing") }
                targets[index].nextToDelete += take
                deleted += take
                progressed = true
            }
        }
        return deleted
    }

    private func create(_ plan: [Int: Range<Int>]) async throws {
        let jobs = plan.sorted { $0.key < $1.key }.flatMap { index, range in
            stride(from: range.lowerBound, to: range.upperBound, by: 200).map { (index, $0..<min($0 + 200, range.upperBound)) }
        }
        let targets = targets
        let store = store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for job in stride(from: writer, to: jobs.count, by: writers) {
                        let (index, range) = jobs[job]
                        let target = targets[index]
                        let operations = range.map {
                            RecordOperation(type: .create, record: StoreWriteBenchCommand.record(named: "b\($0)", index: $0))
                        }
                        let outcome = try await store.modifyRecords(
                            operations, zone: target.zone, atomic: false, policy: Self.policy(), caller: target.caller,
                            in: target.database)
                        guard outcome.commit != nil else { throw BenchError("a growth transaction wrote nothing") }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    static func policy() -> WritePolicy {
        WritePolicy(creatorOnlyWrites: false, now: Int64(Date().timeIntervalSince1970 * 1000))
    }
}
