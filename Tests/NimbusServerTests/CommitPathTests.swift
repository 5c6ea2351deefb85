import Foundation
import Testing

/// Every write of the API goes through `Commits`, which hands each commit's notifications to
/// push delivery: a handler that called the store's `modifyRecords` or `modifyZones` itself
/// could commit and forget to push. Reads the server's sources.
@Suite("Commit path")
struct CommitPathTests {
    /// Files allowed to call the store's writes directly, and why.
    static let allowed: [String: String] = [
        "Notifications/Commits.swift": "the one place that commits and delivers",
        "Sharing/ShareIndex.swift": "bookkeeping records in the server's own index database, which no subscription can watch",
    ]

    @Test func onlyCommitsWritesThroughTheStore() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/NimbusServer")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 50, "the server's sources were found")
        for file in files where Self.allowed[file] == nil {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for call in ["store.modifyRecords(", "store.modifyZones("] {
                #expect(!text.contains(call), "\(file) calls \(call)…) itself: write through `commits` (Commits.swift)")
            }
        }
    }
}
