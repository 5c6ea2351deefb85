import Foundation
import NimbusDocuments
import NimbusProtocol
import NimbusSync
import NimbusTestSupport
import Testing

/// Three devices, a seeded random schedule of edits, creations, renames (case-only ones too),
/// moves, deletes, concurrent edits, offline periods and offline scans; then every device syncs until quiet.
/// All devices must hold the same tree, and no content a user did not delete or overwrite on
/// the same device may be missing. A failure names its seed and the schedule.
@Suite("Documents under random schedules")
struct RandomScheduleTests {
    static let names = ["a.txt", "A.txt", "b.md", "Notes", "ß.txt", "SS.txt", "x:y.txt", "CON.txt"]
    static let folders = ["Docs", "docs", "Work"]

    @Test(arguments: Engine.available, [UInt64(1), 2, 3, 4, 5, 18, 28])
    func devicesConvergeAndLoseNothing(engine: Engine, seed: UInt64) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            var random = SplitMix64(seed: seed)
            let devices = try ["mac", "phone", "pad"].map { try harness.device($0) }
            for device in devices { try await device.folder.start() }
            var live = Set<String>()  // contents no user deleted or overwrote
            var offline = [Int](repeating: 0, count: devices.count)
            var log: [String] = []
            var counter = 0

            func files(_ device: Device) throws -> [String] {
                try device.tree().filter { $0.value != nil }.keys.sorted()
            }
            /// Writes new content at `path`: what was there is gone by the user's hand.
            func overwrite(_ path: String, on device: Device) throws -> String {
                if let old = device.read(path) { live.remove(old) }
                counter += 1
                let text = "content-\(counter)"
                try device.write(text, to: path)
                live.insert(text)
                return text
            }

            for step in 0..<60 {
                let index = random.int(0..<devices.count)
                let device = devices[index]
                let existing = try files(device)
                var action = random.int(0..<10)
                if existing.isEmpty, (2...6).contains(action) { action = 0 }
                switch action {
                case 0, 1:
                    let folder = random.chance(0.5) ? "" : random.pick(Self.folders) + "/"
                    let path = folder + random.pick(Self.names)
                    log.append("\(step) \(device.name) write \(path) \(try overwrite(path, on: device))")
                case 2, 3:
                    let path = random.pick(existing)
                    log.append("\(step) \(device.name) edit \(path) \(try overwrite(path, on: device))")
                case 4:
                    let path = random.pick(existing)
                    let parent = (path as NSString).deletingLastPathComponent
                    let name = (path as NSString).lastPathComponent
                    let newName = random.chance(0.5) ? name.uppercased() == name ? name.lowercased() : name.uppercased() : random.pick(Self.names)
                    let target = parent.isEmpty ? newName : parent + "/" + newName
                    guard !FileManager.default.fileExists(atPath: device.url(target).path) else { continue }
                    try FileManager.default.moveItem(at: device.url(path), to: device.url(target))
                    log.append("\(step) \(device.name) rename \(path) → \(target)")
                case 5:
                    let path = random.pick(existing)
                    let folder = random.pick(Self.folders)
                    let target = folder + "/" + (path as NSString).lastPathComponent
                    try FileManager.default.createDirectory(at: device.url(folder), withIntermediateDirectories: true)
                    guard !FileManager.default.fileExists(atPath: device.url(target).path) else { continue }
                    try FileManager.default.moveItem(at: device.url(path), to: device.url(target))
                    log.append("\(step) \(device.name) move \(path) → \(target)")
                case 6:
                    let path = random.pick(existing)
                    if let old = device.read(path) { live.remove(old) }
                    try FileManager.default.removeItem(at: device.url(path))
                    log.append("\(step) \(device.name) delete \(path)")
                case 7:
                    // The same file edited on two devices before either syncs.
                    let other = devices[(index + 1) % devices.count]
                    let shared = Set(existing).intersection(try files(other))
                    guard let path = shared.sorted().first else { continue }
                    for editor in [device, other] { _ = try overwrite(path, on: editor) }
                    log.append("\(step) \(device.name)+\(other.name) concurrent edit \(path)")
                case 8:
                    offline[index] = random.int(1...6)
                    log.append("\(step) \(device.name) offline for \(offline[index])")
                default:
                    // A scan without the network: the changes wait in the outbox, and may meet
                    // another device's at the server's merge.
                    try await device.folder.scan()
                    log.append("\(step) \(device.name) scan")
                }
                if offline[index] > 0 {
                    offline[index] -= 1
                } else {
                    try await device.folder.sync()
                    log.append("\(step) \(device.name) sync")
                }
            }
            for _ in 0..<3 {
                for device in devices { try await device.folder.sync() }
            }
            let reference = try devices[0].tree()
            var states: [String] = []
            for device in devices {
                for item in try await device.folder.items() where item.kind == .file {
                    states.append("\(device.name) \(item.path) \(item.recordName.prefix(12)) sha \(item.sha256.prefix(8)) downloaded \(item.isDownloaded) uploading \(item.isUploading)")
                }
                for change in try device.folder.engine.store.givenUp() { states.append("\(device.name) gave up \(change.change.recordName) \(String(describing: change.error))") }
            }
            let context = "seed \(seed) on \(engine):\n" + log.joined(separator: "\n") + "\n" + states.joined(separator: "\n")
            for device in devices.dropFirst() {
                let tree = try device.tree()
                #expect(tree == reference, "\(device.name) has \(tree.sorted { $0.key < $1.key }), the Mac \(reference.sorted { $0.key < $1.key }); \(context)")
            }
            let kept = Set(reference.values.compactMap { $0 })
            #expect(live.subtracting(kept).isEmpty, "lost \(live.subtracting(kept).sorted()); \(context)")
            #expect(!reference.keys.contains { $0.contains(FolderReader.temporaryPrefix) }, "\(context)")
        }
    }
}
