import Foundation
import NimbusServer
import NimbusTestSupport
import ReadingList
import Testing

/// The `reading-list` commands, called as functions on device directories, against a real
/// in-process server.
@Suite("reading-list commands", .timeLimit(.minutes(10)))
struct ReadingListCommandsTests {
    static let article = "https://news.example.com/2016/cloudkit-sync-nightmare"

    func commands(_ log: OutputLog) -> ReadingListCommands {
        ReadingListCommands(output: { log.append($0) })
    }

    func initialize(_ world: TestWorld, _ name: String, _ log: OutputLog) async throws -> String {
        let directory = world.deviceDirectory(name)
        try await commands(log).initialize(
            directory: directory, serverURL: world.server.baseURL, container: world.container,
            apiToken: world.apiToken, webAuthToken: world.webAuthToken)
        return directory
    }

    @Test func initAddReadListRefreshRemove() async throws {
        try await TestWorld.with { world in
            let logA = OutputLog()
            let logB = OutputLog()
            let a = try await initialize(world, "A", logA)
            let b = try await initialize(world, "B", logB)
            #expect(logA.text.contains("initialized in \(a)"))
            #expect(logA.text.contains("Synced with \(world.server.baseURL)"))
            let configuration = try Device.open(directory: a).configuration
            #expect(configuration.container == world.container)

            // Re-running init keeps the device's ID.
            try await commands(OutputLog()).initialize(
                directory: a, serverURL: world.server.baseURL, container: world.container, apiToken: world.apiToken,
                webAuthToken: world.webAuthToken, offline: true)
            #expect(try Device.open(directory: a).configuration.deviceID == configuration.deviceID)

            try await commands(logA).add(directory: a, url: Self.article, title: "CloudKit Sync Nightmare")
            let id = Bookmark.id(for: Self.article)
            #expect(logA.text.contains("Bookmarked \(id)  CloudKit Sync Nightmare"))
            try await commands(logA).read(directory: a, reference: String(id.prefix(4)))
            #expect(logA.text.contains("Marked \(id) read (1 read)"))

            // B's list: printed from its store first (empty), then again after the sync.
            let list = OutputLog()
            try await commands(list).list(directory: b)
            let lines = list.all
            #expect(lines.first == "Reading List: 0 bookmarks")
            let after = try #require(lines.firstIndex(of: "After sync:"))
            #expect(lines[after + 1] == "Reading List: 1 bookmark")
            #expect(lines[after + 2].contains(id) && lines[after + 2].contains("read 1×"))

            // Offline edits stay local; list --offline shows them; the next sync sends them.
            try await commands(logB).remove(directory: b, reference: id, offline: true)
            let offline = OutputLog()
            try await commands(offline).list(directory: b, offline: true)
            #expect(offline.all.first == "Reading List: 0 bookmarks (1 change not sent yet)")
            let refresh = OutputLog()
            try await commands(refresh).refresh(directory: a, zone: "ReadingList")
            #expect(refresh.all.contains { $0.contains(id) })  // B's removal is not sent yet
            try await commands(OutputLog()).list(directory: b)
            let refreshed = OutputLog()
            try await commands(refreshed).refresh(directory: a, zone: "ReadingList")
            #expect(refreshed.all.contains("Reading List: 0 bookmarks"))

            await #expect(throws: ReadingListError.noSuchBookmark("zzz")) {
                try await commands(OutputLog()).remove(directory: a, reference: "zzz")
            }
            await #expect(throws: ReadingListError.notInitialized(world.deviceDirectory("nowhere"))) {
                try await commands(OutputLog()).list(directory: world.deviceDirectory("nowhere"))
            }
        }
    }

    @Test func listPrintsTheLocalCopyBeforeTheNetworkAndKeepsEditsWhenTheServerIsDown() async throws {
        try await TestWorld.with { world in
            let log = OutputLog()
            let a = try await initialize(world, "A", log)
            try await commands(log).add(directory: a, url: Self.article, title: "kept")
            await world.stopServer()

            let list = OutputLog()
            try await commands(list).list(directory: a)
            #expect(list.all.first == "Reading List: 1 bookmark")
            #expect(list.all[1].contains("kept"))
            let add = OutputLog()
            try await commands(add).add(directory: a, url: "https://news.example.com/later", title: "later", offline: false)
            #expect(add.text.contains("Not synced"))
            #expect(add.text.contains("1 change kept on this device"))
        }
    }

    @Test func watchRedrawsWhenAPushArrives() async throws {
        try await TestWorld.with { world in
            let setup = OutputLog()
            let a = try await initialize(world, "A", setup)
            let b = try await initialize(world, "B", setup)

            let screen = OutputLog()
            let watch = Task { try await commands(screen).watch(directory: b, clearScreen: false) }
            defer { watch.cancel() }
            // The first frame is drawn once the push channel is up.
            try await screen.wait(for: "the first frame") { $0.contains("Reading List: 0 bookmarks") }

            try await commands(OutputLog()).add(directory: a, url: Self.article, title: "pushed to the watch")
            try await screen.wait(for: "the redraw after the push") { lines in
                lines.contains { $0.contains("pushed to the watch") }
            }
            #expect(screen.text.contains("Reading List: 1 bookmark"))
            watch.cancel()
            _ = await watch.result
        }
    }
}
