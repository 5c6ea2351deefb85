import Foundation
import Nimbus
import NimbusDocuments
import NimbusSync
import NimbusTestSupport
import Testing

/// Live: a watched folder syncs when its files change, without the app (or the test) asking
/// for a scan; folders made after the watch began are watched too.
@Suite("Documents watched")
struct WatchTests {
    #if canImport(Glibc)  // inotify; elsewhere the folder is polled
    @Test(arguments: Engine.available)
    func aChangeInTheFolderIsSentWithoutAScan(engine: Engine) async throws {
        try await DocumentsHarness.with(engine: engine) { harness in
            let mac = try harness.device("mac")
            let phone = try harness.device("phone")
            try await mac.folder.start()
            try await phone.folder.start()
            #expect(await mac.folder.watch())

            // A new file, in a folder made after the watch began: one pass, started by the events.
            var observed = await mac.folder.observe()
            try mac.write("written behind the app's back", to: "Inbox/new.txt")
            #expect(try await firstValue(observed) { items in Self.sent(items, "Inbox/new.txt") })
            try await phone.folder.sync()
            #expect(phone.read("Inbox/new.txt") == "written behind the app's back")

            // A change inside that new folder, and a rename: found by its watch as well.
            observed = await mac.folder.observe()
            try mac.write("changed", to: "Inbox/new.txt")
            try FileManager.default.moveItem(at: mac.url("Inbox/new.txt"), to: mac.url("Inbox/renamed.txt"))
            #expect(try await firstValue(observed) { items in Self.sent(items, "Inbox/renamed.txt") && items.count == 2 })
            try await phone.folder.sync()
            #expect(try phone.tree() == ["Inbox": nil, "Inbox/renamed.txt": "changed"])

            // Stopped, it no longer watches: the folder's files stay.
            await mac.folder.stop()
            #expect(mac.read("Inbox/renamed.txt") == "changed")
        }
    }
    #endif

    /// Whether `items` holds a file at `path` whose change has reached the server.
    static func sent(_ items: [DocumentItem], _ path: String) -> Bool {
        items.contains { $0.path.description == path && !$0.isUploading }
    }
}
