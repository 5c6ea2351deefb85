import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusProtocol
import NimbusServer
import NimbusSync
import ReadingList
import ReadingListSandbox


/// The demo's steps. Printing is the only thing scripted; every result is awaited from the
/// devices' local stores.
final class DemoScript: Sendable {
    let sandbox: Sandbox
    let timeout: Duration
    let verbose: Bool
    let a: Device
    let b: Device
    private let feeds = DemoFeeds()
    private let started = ContinuousClock.now

    init(sandbox: Sandbox, timeout: Duration, verbose: Bool) throws {
        self.sandbox = sandbox
        self.timeout = timeout
        self.verbose = verbose
        a = try sandbox.device("A")
        b = try sandbox.device("B")
        if verbose {
            for (name, device) in [("A", a), ("B", b)] {
                let events = device.engine.events()
                Task {
                    for await event in events { self.trace(name, "engine \(event)") }
                }
            }
        }
    }

    /// A push feed for a device; with `verbose`, its events are printed.
    private func feed(_ name: String, _ device: Device) async -> PushFeed {
        await PushFeed.start(client: device.pushClient(), engine: device.engine) { event in
            self.trace(name, "push \(event)")
        }
    }

    private func trace(_ device: String, _ text: String) {
        guard verbose else { return }
        say(String(format: "        %8.1f ms  %@ │ %@", (ContinuousClock.now - started).milliseconds, device, text))
    }

    func run() async throws {
        say("Nimbus demo: the Reading List on two devices of one user")
        say("  server  \(sandbox.server.baseURL) (embedded, data in \(sandbox.directory))")
        say("  devices A and B: each its own SQLite store, sync engine and push WebSocket")
        say("")

        // Setup: push channel first, so nothing between the first fetch and the connection is missed.
        var started = ContinuousClock.now
        feeds.a = await feed("A", a)
        try await feeds.a!.waitUntilConnected(timeout: timeout)
        try await a.readingList.sync()
        let setupA = ContinuousClock.now - started
        started = ContinuousClock.now
        feeds.b = await feed("B", b)
        try await feeds.b!.waitUntilConnected(timeout: timeout)
        try await b.readingList.sync()
        let setupB = ContinuousClock.now - started
        step(0, "Set up A and B: push channel, zones ReadingList + ReadingHistory, subscription, first fetch")
        result("A \(ms(setupA)), B \(ms(setupB))")

        // 1. A bookmark on A appears on B.
        let article = "https://news.example.com/2016/cloudkit-sync-nightmare"
        let id = Bookmark.id(for: article)
        step(1, "A bookmarks \"CloudKit Sync Nightmare\" → it appears on B")
        var (total, action) = try await timed(on: b, "the bookmark on B", { $0.bookmark(id) != nil }) {
            try self.a.readingList.add(url: article, title: "CloudKit Sync Nightmare")
            try await self.a.readingList.send()
        }
        result("on B after \(ms(total))  (A's local write + send returned after \(ms(action)); then the push, B's fetch, B's store)")

        // 2. B marks it read; A's history shows it (the other zone, the other direction).
        step(2, "B marks it read → A's ReadingHistory shows 1 read")
        (total, action) = try await timed(on: a, "the read on A", { $0.readState(id)?.readCount == 1 }) {
            try self.b.readingList.markRead(id)
            try await self.b.readingList.send()
        }
        result("on A after \(ms(total))  (B's write + send returned after \(ms(action)))")

        // 3. Un-bookmark: a second article comes and goes.
        let second = "https://news.example.com/2016/advanced-cloudkit"
        let secondID = Bookmark.id(for: second)
        step(3, "A bookmarks \"Advanced CloudKit\", then un-bookmarks it → it disappears from B")
        (total, _) = try await timed(on: b, "the second bookmark on B", { $0.bookmark(secondID) != nil }) {
            try self.a.readingList.add(url: second, title: "Advanced CloudKit")
            try await self.a.readingList.send()
        }
        let added = total
        (total, _) = try await timed(on: b, "the removal on B", { $0.bookmark(secondID) == nil }) {
            try self.a.readingList.remove(secondID)
            try await self.a.readingList.send()
        }
        result("appeared on B after \(ms(added)), disappeared \(ms(total)) after the un-bookmark")

        // 4. B goes offline; A keeps editing.
        step(4, "B goes offline (no push channel, no fetches); A adds two articles and renames the first")
        await feeds.b!.stop()
        let offline = [
            ("https://news.example.com/2016/everything-but-the-kitchen-sync", "Everything but the Kitchen Sync"),
            ("https://news.example.com/2016/ios-frameworks", "iOS Frameworks"),
        ]
        started = ContinuousClock.now
        for (url, title) in offline { try a.readingList.add(url: url, title: title) }
        try a.readingList.rename(id, title: "CloudKit Sync Nightmare (part 2)")
        try await a.readingList.send()
        let sent = ContinuousClock.now - started
        let bWhileOffline = try b.readingList.snapshot()
        result("A sent 3 changes in \(ms(sent)); B still shows \(bWhileOffline.bookmarks.count) bookmark(s), title \"\(bWhileOffline.bookmark(id)?.title ?? "-")\"")

        // 5. B comes back and catches up.
        step(5, "B comes back online: reconnects its push channel and fetches → catches up")
        let offlineIDs = offline.map { Bookmark.id(for: $0.0) }
        (total, _) = try await timed(on: b, "B to catch up", { snapshot in
            offlineIDs.allSatisfy { snapshot.bookmark($0) != nil }
                && snapshot.bookmark(id)?.title == "CloudKit Sync Nightmare (part 2)"
        }) {
            self.feeds.b = await self.feed("B", self.b)
            try await self.feeds.b!.waitUntilConnected(timeout: self.timeout)
            try await self.b.readingList.fetch()
        }
        result("caught up after \(ms(total)) (reconnect + one fetch of the changed zone):")
        for line in ListView.render(try b.readingList.snapshot()) { say("        B │ \(line)") }

        // 6. Both edit the same article at once.
        step(6, "A and B edit the same article at once: both mark it read, both rename it (B a moment later)")
        let timeA = try a.readingList.rename(id, title: "Renamed on A").editedAt
        try a.readingList.markRead(id)
        while ReadingList.wallClock() <= timeA { await Task.yield() }  // B's edit is the later one
        try b.readingList.rename(id, title: "Renamed on B")
        try b.readingList.markRead(id)
        let converged: @Sendable (ReadingListSnapshot) -> Bool = { snapshot in
            snapshot.pending == 0 && snapshot.bookmark(id)?.title == "Renamed on B"
                && snapshot.readState(id)?.readCount == 3
        }
        let onA = try await a.readingList.arrival(of: "A to converge", timeout: timeout, where: converged)
        let onB = try await b.readingList.arrival(of: "B to converge", timeout: timeout, where: converged)
        started = ContinuousClock.now
        async let sendA: Void = a.readingList.send()
        async let sendB: Void = b.readingList.send()
        _ = try await (sendA, sendB)
        let convergedA = try await onA.value().at - started
        let convergedB = try await onB.value().at - started
        result("both sent at once; converged on A after \(ms(convergedA)), on B after \(ms(convergedB)):")
        let final = try a.readingList.snapshot()
        say("        title \"\(final.bookmark(id)?.title ?? "-")\" (latest edit wins), read \(final.readState(id)?.readCount ?? 0)× (1 + 1 + 1: counters add up)")
        for (name, device) in [("A", a), ("B", b)] {
            for conflict in try device.readingList.store.conflictLog(limit: 10).reversed() {
                let fields = conflict.resolutions.map { resolution in
                    "\(resolution.field) → \(resolution.winner.rawValue)" + Self.lost(resolution.lostValue)
                }
                say("        \(name)'s conflict log │ \(conflict.zoneName)/\(conflict.recordName): \(fields.joined(separator: "; "))")
            }
        }

        // 7. Kill and restart B: the list comes from the local store, before any network call.
        step(7, "B is killed and relaunched: its list is there from the local store before any network call")
        await feeds.b!.stop()
        feeds.b = nil
        started = ContinuousClock.now
        let relaunched = try Device.open(directory: b.directory)
        let cached = try relaunched.readingList.snapshot()
        let launch = ContinuousClock.now - started
        result("\(cached.bookmarks.count) bookmarks and \(cached.history.count) history record(s) read in \(ms(launch)), no request made")

        // 8. Are they in sync? Compare each device's view with the server's.
        step(8, "Am I in sync? Each device compares its copy of each zone with the server's")
        started = ContinuousClock.now
        var verdicts: [String] = []
        for (name, engine) in [("A", a.engine), ("B", relaunched.engine)] {
            for zone in ReadingListSchema.zones {
                let check = try await engine.check(zone: zone)
                verdicts.append("\(name)/\(zone): \(check.isInSync ? "in sync" : "DIFFERS \(check)")")
            }
        }
        result("\(verdicts.joined(separator: ", ")) (\(ms(ContinuousClock.now - started)))")
        say("")
        say("Done: every step above ran over HTTP and WebSocket against the embedded server.")
    }

    /// Starts watching `device`'s store for `condition`, runs `action`, and returns the time
    /// from the start of the action to the store satisfying the condition (seen by the
    /// store's commit notification), and the action's own time.
    private func timed(
        on device: Device, _ what: String, _ condition: @escaping @Sendable (ReadingListSnapshot) -> Bool,
        action: @Sendable () async throws -> Void
    ) async throws -> (total: Duration, action: Duration) {
        let arrival = try await device.readingList.arrival(of: what, timeout: timeout, where: condition)
        let started = ContinuousClock.now
        do {
            try await action()
        } catch {
            arrival.cancel()
            throw error
        }
        let acted = ContinuousClock.now - started
        let seen = try await arrival.value()
        return (seen.at - started, acted)
    }

    /// The losing value of a string field, for the conflict log lines.
    static func lost(_ json: String?) -> String {
        guard let json, let value = try? JSON.parse(Array(json.utf8)), let text = value["value"]?.string else {
            return ""
        }
        return " (\"\(text)\" lost)"
    }

    func finish() async {
        await feeds.a?.stop()
        await feeds.b?.stop()
    }

    private func step(_ number: Int, _ text: String) {
        say("")
        say("[\(number)] \(text)")
    }

    private func result(_ text: String) { say("    ✓ \(text)") }

    private func say(_ text: String) {
        print(text)
        fflush(nil)
    }

    private func ms(_ duration: Duration) -> String { String(format: "%.1f ms", duration.milliseconds) }
}

