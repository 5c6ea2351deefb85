import Foundation
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import NimbusTestSupport
import Testing

/// Random schedules of edits on several devices, with dropped and delayed pushes (fetches
/// that happen or not), throttling, a forced token expiry, a zone deleted on the server and
/// devices killed between writing and sending. Every schedule replays from its seed.
@Suite("Convergence under random schedules")
struct ConvergenceTests {
    static let zone = "ReadingList"
    static let configuration = SyncConfiguration(
        zones: [zone, "ReadingHistory"], subscriptionID: nil,
        defaultMergeRules: MergeRules(defaultPolicy: .latestEdit(timestampField: "editedAt")))

    struct Device {
        var name: String
        var engine: SyncEngine
    }

    enum Action: CustomStringConvertible {
        case save(device: Int, record: Int)
        case delete(device: Int, record: Int)
        case send(device: Int)
        case pushDelivered(device: Int)
        case pushDropped(device: Int)
        case kill(device: Int)
        case expireTokens
        case deleteZoneOnServer

        var description: String {
            switch self {
            case .save(let d, let r): return "save d\(d) r\(r)"
            case .delete(let d, let r): return "delete d\(d) r\(r)"
            case .send(let d): return "send d\(d)"
            case .pushDelivered(let d): return "push d\(d)"
            case .pushDropped(let d): return "drop-push d\(d)"
            case .kill(let d): return "kill d\(d)"
            case .expireTokens: return "expire-tokens"
            case .deleteZoneOnServer: return "delete-zone"
            }
        }
    }

    /// 40 schedules by default (about 12 s); `NIMBUS_SCHEDULES=500 swift test --filter Convergence`
    /// explores more. A failure prints its seed and the whole schedule; add the seed to
    /// ``replayedSeeds`` to keep it.
    static let schedules: [(Int, UInt64)] = {
        let count = Int(ProcessInfo.processInfo.environment["NIMBUS_SCHEDULES"] ?? "") ?? 40
        let generated = (1...max(1, count)).map { index -> (Int, UInt64) in
            (2 + index % 2, UInt64(index) &* 104_729 &+ 17)
        }
        return replayedSeeds + generated
    }()

    /// Seeds that once found a bug.
    static let replayedSeeds: [(Int, UInt64)] = [(3, 42), (2, 31676), (2, 63352), (2, 95028), (3, 150461), (3, 23757), (2, 221732), (3, 1152036), (3, 3037158), (2, 28695763), (2, 30580885)]

    @Test(arguments: ConvergenceTests.schedules)
    func devicesConvergeAndNoEditIsLost(deviceCount: Int, seed: UInt64) async throws {
        try await SyncHarness.with(retention: .zero) { harness in
            var rng = SeededGenerator(seed: seed)
            var devices: [Device] = []
            for index in 0..<deviceCount {
                let (engine, _) = try harness.engine(
                    "d\(index)", configuration: Self.configuration, seed: seed &+ UInt64(index), throttleRate: 0.1)
                try await engine.start()
                devices.append(Device(name: "d\(index)", engine: engine))
            }

            // The last action on each record in schedule order, and the value of the last save.
            var lastAction: [String: (step: Int, isSave: Bool, title: String)] = [:]
            var log: [String] = []
            let steps = 60
            for step in 1...steps {
                let device = Int.random(in: 0..<deviceCount, using: &rng)
                let roll = Int.random(in: 0..<100, using: &rng)
                let action: Action
                switch roll {
                case 0..<35: action = .save(device: device, record: Int.random(in: 0..<8, using: &rng))
                case 35..<45: action = .delete(device: device, record: Int.random(in: 0..<8, using: &rng))
                case 45..<65: action = .send(device: device)
                case 65..<82: action = .pushDelivered(device: device)
                case 82..<92: action = .pushDropped(device: device)
                case 92..<96: action = .kill(device: device)
                case 96..<98: action = .expireTokens
                default: action = .deleteZoneOnServer
                }
                log.append("\(step): \(action)")
                if let traced = ProcessInfo.processInfo.environment["NIMBUS_TRACE"], traced.hasPrefix("\(seed):") {
                    let tracedRecord = String(traced.dropFirst("\(seed):".count))
                    var line = "S\(seed) \(step) \(action) |"
                    for device in devices {
                        let r = try device.engine.store.record(zone: Self.zone, name: tracedRecord)
                        let p = try device.engine.store.pendingChanges().first { $0.recordName == tracedRecord }
                        line += " \(device.name): \(r?.fields["title"]?.stringValue ?? "nil")/\(r?.serverChangeTag ?? "-")/\(p.map { "\($0.kind)" } ?? "")"
                    }
                    print(line)
                }
                switch action {
                case .save(let d, let r):
                    let name = "r\(r)"
                    let title = "d\(d)@\(step)"
                    let record = LocalRecord(
                        zoneName: Self.zone, recordName: name, recordType: "Bookmark",
                        fields: ["title": .string(title), "editedAt": .timestamp(Int64(step))])
                    try devices[d].engine.store.write { _, outbox in try outbox.save(record) }
                    lastAction[name] = (step, true, title)
                case .delete(let d, let r):
                    let name = "r\(r)"
                    // A user can only delete what their device shows.
                    guard try devices[d].engine.store.record(zone: Self.zone, name: name) != nil else { continue }
                    try devices[d].engine.store.write { _, outbox in try outbox.delete(zone: Self.zone, recordName: name) }
                    lastAction[name] = (step, false, "")
                case .send(let d):
                    try? await devices[d].engine.sendChanges()
                case .pushDelivered(let d):
                    try? await devices[d].engine.fetchChanges()
                case .pushDropped:
                    break
                case .kill(let d):
                    // The process dies between writing and sending: a new engine over the same store.
                    let (engine, _) = try harness.engine(
                        devices[d].name, configuration: Self.configuration, seed: seed &+ UInt64(step), throttleRate: 0.1)
                    try? await engine.start()
                    devices[d].engine = engine
                case .expireTokens:
                    _ = try await harness.server.compactNow()
                case .deleteZoneOnServer:
                    _ = try? await harness.container(device: "admin").privateCloudDatabase.deleteRecordZone(
                        withID: ZoneID(zoneName: Self.zone))
                }
            }

            // Quiesce: every device sends and fetches until nothing is pending and all agree.
            var converged = false
            for _ in 0..<12 {
                for device in devices { try await device.engine.sendChanges() }
                for device in devices { try await device.engine.fetchChanges() }
                let pending = try devices.map { try $0.engine.store.pendingCount() }.reduce(0, +)
                let views = try devices.map { try $0.engine.store.records(inZone: Self.zone).map { [$0.recordName: $0.fields] } }
                if pending == 0 && views.allSatisfy({ $0 == views[0] }) {
                    converged = true
                    break
                }
            }
            var state: [String] = []
            for device in devices {
                let pending = try device.engine.store.pendingChanges().map { "\($0.kind) \($0.recordName) \($0.fields["title"]?.stringValue ?? "-")" }
                let records = try device.engine.store.records(inZone: Self.zone).map { "\($0.recordName)=\($0.fields["title"]?.stringValue ?? "-")" }
                state.append("\(device.name): pending \(pending) records \(records)")
            }
            let context = "seed \(seed)\n" + state.joined(separator: "\n") + "\nschedule:\n" + log.joined(separator: "\n")
            #expect(converged, "devices did not converge; \(context)")

            // The server agrees with the devices.
            let serverRecords = try await harness.container(device: "checker").privateCloudDatabase
                .allRecordZoneChanges(inZoneWith: ZoneID(zoneName: Self.zone), since: nil)
                .reduce(into: [String: String]()) { result, page in
                    for record in page.modifications { result[record.id.recordName] = record.fieldValue(forKey: "title")?.stringValue }
                }
            let local = try devices[0].engine.store.records(inZone: Self.zone)
            #expect(Dictionary(uniqueKeysWithValues: local.map { ($0.recordName, $0.fields["title"]?.stringValue) }) == serverRecords.mapValues { Optional($0) }, "\(context)")

            // No edit is lost: a record whose last action was a save exists with that save's value.
            for (name, last) in lastAction where last.isSave {
                let record = local.first { $0.recordName == name }
                #expect(record?.fields["title"]?.stringValue == last.title, "\(name) lost its last edit; \(context)")
            }
        }
    }
}
