import Foundation
import NimbusDocuments
import NimbusTestSupport
import Testing

/// Three devices: a change on one reaches both others; colliding names created on two
/// devices at once end the same on all three.
@Suite("Documents on three devices")
struct ThreeDeviceTests {
    @Test(arguments: Engine.available)
    func collidingNamesEndTheSameEverywhere(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let devices = try ["mac", "phone", "pad"].map { try harness.device($0) }
            for device in devices { try await device.folder.start() }
            try devices[0].write("from mac", to: "Report.txt")
            try devices[1].write("from phone", to: "report.TXT")
            try devices[2].write("from pad", to: "REPORT.txt")
            for _ in 0..<2 {
                for device in devices { try await device.folder.sync() }
            }
            let tree = try devices[0].tree()
            #expect(tree.count == 3)
            #expect(Set(tree.values.compactMap { $0 }) == ["from mac", "from phone", "from pad"])
            for device in devices.dropFirst() { #expect(try device.tree() == tree) }
            let names = Set(tree.keys.map { NameKey($0) })
            #expect(names.count == 3, "no two local names collide on a case-insensitive disk")

            try devices[1].write("edited on phone", to: tree.first { $0.value == "from mac" }!.key)
            try await devices[1].folder.sync()
            try await devices[0].folder.sync()
            try await devices[2].folder.sync()
            for device in devices { #expect(try device.tree() == devices[1].tree()) }
        }
    }
}
