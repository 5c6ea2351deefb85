import Foundation
import Nimbus
import NimbusServer
import NimbusSync
import NimbusTestSupport
import ReadingList
import Testing

/// The Reading List on two devices of one user against a real in-process server, over HTTP
/// and the push WebSocket. Every wait is on a device's local store (with a guard timeout).
@Suite("Reading List sync", .timeLimit(.minutes(10)))
struct ReadingListSyncTests {
    static let article = "https://news.example.com/2016/cloudkit-sync-nightmare"

    @Test func aBookmarkOnOneDeviceAppearsOnTheOtherAndAnUnbookmarkDisappears() async throws {
        try await TestWorld.with { world in
            let a = try world.device("A")
            let b = try world.device("B")
            let feedA = try await world.online(a)
            let feedB = try await world.online(b)

            let bookmark = try a.readingList.add(url: Self.article, title: "CloudKit Sync Nightmare")
            #expect(bookmark.isPending)
            try await a.readingList.send()
            let onB = try await b.readingList.waitUntil("the bookmark on B") { $0.bookmark(bookmark.id) != nil }
            #expect(onB.bookmark(bookmark.id)?.title == "CloudKit Sync Nightmare")
            #expect(onB.bookmark(bookmark.id)?.url == Self.article)
            #expect(onB.bookmark(bookmark.id)?.isPending == false)
            #expect(feedB.pushesReceived >= 1)

            try a.readingList.remove(bookmark.id)
            #expect(try a.readingList.bookmarks().isEmpty)  // gone locally at once
            try await a.readingList.send()
            try await b.readingList.waitUntil("the removal on B") { $0.bookmark(bookmark.id) == nil }
            #expect(try a.readingList.snapshot().pending == 0)
            // A's own changes never came back to it as a push.
            #expect(feedA.pushesReceived == 0)
            await feedA.stop()
            await feedB.stop()
        }
    }

    @Test func markingReadOnOneDeviceUpdatesTheOthersHistory() async throws {
        try await TestWorld.with { world in
            let a = try world.device("A")
            let b = try world.device("B")
            let feedA = try await world.online(a)
            let feedB = try await world.online(b)
            let id = try a.readingList.add(url: Self.article).id
            try await a.readingList.send()
            try await b.readingList.waitUntil("the bookmark on B") { $0.bookmark(id) != nil }

            try b.readingList.markRead(id)
            try await b.readingList.send()
            let onA = try await a.readingList.waitUntil("the read on A") { $0.readState(id)?.readCount == 1 }
            #expect(onA.readState(id)?.url == Self.article)
            await feedA.stop()
            await feedB.stop()
        }
    }

    @Test func anOfflineDeviceCatchesUpWhenItComesBack() async throws {
        try await TestWorld.with { world in
            let a = try world.device("A")
            let b = try world.device("B")
            let feedA = try await world.online(a)
            var feedB = try await world.online(b)
            let first = try a.readingList.add(url: Self.article, title: "one").id
            try await a.readingList.send()
            try await b.readingList.waitUntil("the first bookmark on B") { $0.bookmark(first) != nil }

            await feedB.stop()  // B goes offline
            let second = try a.readingList.add(url: "https://news.example.com/2", title: "two").id
            try a.readingList.rename(first, title: "one, renamed")
            try a.readingList.markRead(second)
            try await a.readingList.send()
            let whileOffline = try b.readingList.snapshot()
            #expect(whileOffline.bookmarks.map(\.id) == [first])
            #expect(whileOffline.bookmark(first)?.title == "one")

            // B comes back: reconnects and fetches.
            feedB = await PushFeed.start(client: b.pushClient(), engine: b.engine)
            try await feedB.waitUntilConnected(timeout: .seconds(20))
            try await b.readingList.fetch()
            let caughtUp = try b.readingList.snapshot()
            #expect(caughtUp.bookmarks.map(\.id).sorted() == [first, second].sorted())
            #expect(caughtUp.bookmark(first)?.title == "one, renamed")
            #expect(caughtUp.readState(second)?.readCount == 1)
            for zone in ReadingListSchema.zones {
                #expect(try await b.engine.check(zone: zone).isInSync)
            }
            await feedA.stop()
            await feedB.stop()
        }
    }

    /// How long the concurrent-edit test waits for each convergence: two sends that conflict,
    /// a retry and a push each way took over 10 s under the whole suite's load (0.3 s alone);
    /// each wait still ends as soon as the device converges.
    static let underLoad: Duration = .seconds(60)

    @Test func simultaneousEditsAreMergedByTheSchemaPolicies() async throws {
        try await TestWorld.with { world in
            // A's edits are older than B's by the clocks: B's rename is the latest edit.
            let a = try world.device("A", now: { 1_000_000 })
            let b = try world.device("B", now: { 2_000_000 })
            let feedA = try await world.online(a)
            let feedB = try await world.online(b)
            let id = try a.readingList.add(url: Self.article, title: "original").id
            try await a.readingList.send()
            try await b.readingList.waitUntil("the bookmark on B", timeout: Self.underLoad) { $0.bookmark(id) != nil }

            // Both edit before either sends: same title field, and the first read of a history
            // record neither device has seen (both create it).
            try a.readingList.rename(id, title: "renamed on A")
            try a.readingList.markRead(id)
            try b.readingList.rename(id, title: "renamed on B")
            try b.readingList.markRead(id)
            let converged: @Sendable (ReadingListSnapshot) -> Bool = {
                $0.pending == 0 && $0.bookmark(id)?.title == "renamed on B" && $0.readState(id)?.readCount == 2
            }
            let onA = try await a.readingList.arrival(of: "A to converge", timeout: Self.underLoad, where: converged)
            let onB = try await b.readingList.arrival(of: "B to converge", timeout: Self.underLoad, where: converged)
            async let sendA: Void = a.readingList.send()
            async let sendB: Void = b.readingList.send()
            _ = try await (sendA, sendB)
            _ = try await onA.value()
            _ = try await onB.value()

            // Again, now that both have the history record: the counter adds both reads.
            try a.readingList.markRead(id)
            try b.readingList.markRead(id)
            let again: @Sendable (ReadingListSnapshot) -> Bool = { $0.pending == 0 && $0.readState(id)?.readCount == 4 }
            let againOnA = try await a.readingList.arrival(of: "A to count 4 reads", timeout: Self.underLoad, where: again)
            let againOnB = try await b.readingList.arrival(of: "B to count 4 reads", timeout: Self.underLoad, where: again)
            async let sendA2: Void = a.readingList.send()
            async let sendB2: Void = b.readingList.send()
            _ = try await (sendA2, sendB2)
            _ = try await againOnA.value()
            _ = try await againOnB.value()

            let conflicts = try a.readingList.store.conflictLog() + b.readingList.store.conflictLog()
            let fields = Set(conflicts.flatMap(\.resolutions).map(\.field))
            #expect(fields.contains(ReadingListSchema.BookmarkField.title))
            #expect(fields.contains(ReadingListSchema.HistoryField.readCount))
            await feedA.stop()
            await feedB.stop()
        }
    }

    @Test func refreshFetchesOnlyThatZone() async throws {
        try await TestWorld.with { world in
            let a = try world.device("A")
            let feedA = try await world.online(a)
            let counting = Guard<CountingService?>(nil)
            let b = try world.engine("B") { base in
                let service = CountingService(base)
                counting.value = service
                return service
            }
            try await b.sync()  // set up, no push channel: B fetches only when told
            let id = try a.readingList.add(url: Self.article).id
            try a.readingList.markRead(id)
            try await a.readingList.send()

            let service = try #require(counting.value)
            service.reset()
            try await b.refresh(zone: ReadingListSchema.bookmarksZone)
            let snapshot = try b.snapshot()
            #expect(snapshot.bookmark(id) != nil)
            #expect(snapshot.readState(id) == nil)  // the other zone was not fetched
            #expect(service.count("zoneChanges:ReadingList") == 1)
            #expect(service.count("zoneChanges:ReadingHistory") == 0)
            #expect(service.count("databaseChanges") == 0)

            try await b.refresh(zone: ReadingListSchema.historyZone)
            #expect(try b.snapshot().readState(id)?.readCount == 1)
            await #expect(throws: ReadingListError.unknownZone("Nope")) { try await b.refresh(zone: "Nope") }
            await feedA.stop()
        }
    }

    @Test func theListIsReadFromTheLocalStoreAfterARestartWithoutTheServer() async throws {
        try await TestWorld.with { world in
            let a = try world.device("A")
            try await a.readingList.sync()
            try a.readingList.add(url: Self.article, title: "synced")
            try await a.readingList.send()
            try a.readingList.add(url: "https://news.example.com/offline", title: "not sent yet")
            await world.stopServer()  // the server is gone

            // "Relaunch": a new process would open the directory again.
            let relaunched = try Device.open(directory: a.directory)
            let snapshot = try relaunched.readingList.snapshot()
            #expect(snapshot.bookmarks.map(\.title) == ["synced", "not sent yet"])
            #expect(snapshot.pending == 1)
            #expect(snapshot.bookmarks.last?.isPending == true)
        }
    }

    @Test func bookmarkIDsAreStableAndReferencesResolve() throws {
        #expect(Bookmark.id(for: Self.article) == Bookmark.id(for: Self.article))
        #expect(Bookmark.id(for: Self.article).count == 10)
        #expect(Bookmark.id(for: Self.article) != Bookmark.id(for: Self.article + "/"))
    }
}

/// A value set from a closure the test cannot await.
final class Guard<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
