import Foundation
import Nimbus
import NimbusServer
import NimbusSync
import NimbusTestSupport
import ReadingList
import Testing

/// An article's thumbnail: added with `reading-list add --thumbnail`, uploaded with the
/// bookmark, and fetched lazily on the other device.
@Suite("Reading List thumbnails", .timeLimit(.minutes(10)))
struct ThumbnailSyncTests {
    static let article = "https://news.example.com/2016/cloudkit-sync-nightmare"

    @Test func aThumbnailAddedOnOneDeviceIsDownloadedOnTheOtherOnlyWhenShown() async throws {
        try await TestWorld.with { world in
            let log = OutputLog()
            let commands = ReadingListCommands(output: { log.append($0) })
            let a = world.deviceDirectory("A")
            try await commands.initialize(
                directory: a, serverURL: world.server.baseURL, container: world.container, apiToken: world.apiToken,
                webAuthToken: world.webAuthToken)
            let counting = Guard<CountingService?>(nil)
            let b = try world.engine("B") { base in
                let service = CountingService(base)
                counting.value = service
                return service
            }
            try await b.sync()

            // A picture file the user picked; the command keeps a copy, so it may go away.
            let picture = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
            let files = world.deviceDirectory("files")
            try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
            let picked = URL(fileURLWithPath: files).appendingPathComponent("picked.jpg")
            try picture.write(to: picked)
            try await commands.add(directory: a, url: Self.article, title: "CloudKit Sync Nightmare", thumbnail: picked.path)
            try FileManager.default.removeItem(at: picked)
            let id = Bookmark.id(for: Self.article)
            #expect(log.text.contains("Bookmarked \(id)  CloudKit Sync Nightmare  (with a thumbnail)"))
            #expect(try Device.open(directory: a).readingList.snapshot().pending == 0)

            // B gets the bookmark with the thumbnail's description, not its bytes.
            let service = try #require(counting.value)
            try await b.fetch()
            let bookmark = try #require(try b.snapshot().bookmark(id))
            #expect(bookmark.thumbnail?.size == 150_000)
            #expect(service.count("downloadAsset") == 0)

            // Shown: downloaded once, then from the cache.
            let file = try #require(try await b.thumbnail(of: id))
            #expect(try Data(contentsOf: file) == picture)
            _ = try await b.thumbnail(of: id)
            #expect(service.count("downloadAsset") == 1)

            // The command line on A shows the device's own copy.
            let shown = OutputLog()
            let output = files + "/out.jpg"
            try await ReadingListCommands(output: { shown.append($0) }).thumbnail(
                directory: a, reference: String(id.prefix(5)), outputFile: output)
            #expect(shown.text == "Thumbnail saved to \(output)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == picture)

            // Renaming keeps the thumbnail and uploads nothing again.
            service.reset()
            try b.rename(id, title: "Renamed")
            try await b.send()
            #expect(service.count("uploadAsset") == 0)
            #expect(try b.snapshot().bookmark(id)?.thumbnail?.size == 150_000)
        }
    }
}
