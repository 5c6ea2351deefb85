import Foundation
import NimbusServer
import NimbusSync
import NimbusTestSupport
import ReadingList
import Testing

/// `reading-list status`: the device's sync diagnostics, readable and as JSON, with no network.
@Suite("reading-list status", .timeLimit(.minutes(10)))
struct ReadingListStatusTests {
    @Test func statusShowsWhatIsPendingAndTheLastSyncAsTextAndJSON() async throws {
        try await TestWorld.with { world in
            let directory = world.deviceDirectory("A")
            let commands = ReadingListCommands(output: { _ in })
            try await commands.initialize(
                directory: directory, serverURL: world.server.baseURL, container: world.container,
                apiToken: world.apiToken, webAuthToken: world.webAuthToken)
            try await commands.add(directory: directory, url: "https://example.com/unsent", title: "Unsent", offline: true)
            let id = Bookmark.id(for: "https://example.com/unsent")

            let text = OutputLog()
            try await ReadingListCommands(output: { text.append($0) }).status(directory: directory)
            #expect(text.text.contains("Zone ReadingList: 1 pending; fetched"))
            #expect(text.all.contains { $0.hasPrefix("  save Bookmark \(id): queued") })
            #expect(text.text.contains("Subscription reading-list (private database): known"))
            #expect(text.text.contains("Push: not listening"))

            let json = OutputLog()
            try await ReadingListCommands(output: { json.append($0) }).status(directory: directory, json: true)
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let diagnostics = try decoder.decode(SyncDiagnostics.self, from: Data(json.text.utf8))
            #expect(diagnostics.pendingCount == 1)
            #expect(diagnostics.zones.first { $0.name == "ReadingList" }?.pending.map(\.recordName) == [id])
            #expect(diagnostics.zones.allSatisfy { $0.lastFetch?.succeeded == true && $0.token.hasToken })
        }
    }
}
