import Foundation
import Nimbus
import NimbusDocuments
import NimbusProtocol
import NimbusSync
import NimbusTestSupport
import Testing

/// Nothing is read or written outside the synced folder: symbolic links are not followed,
/// and names from records (another client may write any) never become paths out.
@Suite("Documents stay in their folder")
struct EscapeTests {
    @Test(arguments: Engine.available)
    func linksOutAreNotSynced(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let outside = URL(fileURLWithPath: harness.directory).appendingPathComponent("outside")
            try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
            try Data("secret".utf8).write(to: outside.appendingPathComponent("secret.txt"))
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            try mac.write("inside", to: "inside.txt")
            try FileManager.default.createSymbolicLink(at: mac.url("out"), withDestinationURL: outside)
            try FileManager.default.createSymbolicLink(
                at: mac.url("secret-link.txt"), withDestinationURL: outside.appendingPathComponent("secret.txt"))
            try await mac.folder.start()
            try await phone.folder.start()
            #expect(try await mac.folder.items().map(\.path.description) == ["inside.txt"])
            #expect(try phone.tree() == ["inside.txt": "inside"])
        }
    }

    /// Records whose names are `..`, paths, absolute paths or device names (a third-party
    /// client can write any name) land inside the folder under valid local names, and keep
    /// their true names.
    @Test(arguments: Engine.available)
    func hostileNamesStayInside(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            try await mac.folder.start()
            let hostile = ["..", "../../escape.txt", "/etc/evil", "CON", "a\\..\\b", "."]
            let source = URL(fileURLWithPath: harness.directory).appendingPathComponent("bytes")
            try Data("hostile".utf8).write(to: source)
            // Written as another client would: records straight through the engine's outbox.
            try mac.folder.engine.store.write { _, outbox in
                for (index, name) in hostile.enumerated() {
                    try outbox.save(LocalRecord(
                        zoneName: DocumentsFolder.zone, recordName: "hostile-\(index)", recordType: "DocumentFile",
                        fields: [
                            "name": .string(name), "size": .int64(7), "modified": .timestamp(0), "device": .string("other"),
                            "sha256": .string("90a1e2c5b8b7f3d6a43d2a7d3c1b0f0b25c4b7e3f8d0e4c2b1d1e6e6d8f9a1b2"),
                            "content": Nimbus.Asset(fileURL: source).fieldValue,
                        ]))
                }
            }
            try await mac.folder.engine.sendChanges()
            let phone = try harness.device("phone")
            try await phone.folder.start()
            let tree = try phone.tree()
            #expect(tree.count == hostile.count)
            #expect(tree.values.allSatisfy { $0 == "hostile" })
            #expect(!tree.keys.contains { $0.contains("/") || $0 == ".." || $0 == "." || $0 == "CON" })
            let parent = URL(fileURLWithPath: harness.directory).appendingPathComponent("phone")
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: parent.path)) == ["folder", "state"])
            #expect(Set(try await phone.folder.items().map(\.name)) == Set(hostile))
            #expect(!FileManager.default.fileExists(atPath: URL(fileURLWithPath: harness.directory).appendingPathComponent("escape.txt").path))
        }
    }
}
