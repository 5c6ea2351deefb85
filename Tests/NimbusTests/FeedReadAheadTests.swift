import Foundation
import Nimbus
import NimbusTestSupport
import Testing

/// The sync engines' read-ahead of a zone's feed (``FeedReadAhead``): the next page is asked
/// for before this one is read, pages are read ahead up to the feed's depth and never
/// further, a wrong hint is dropped; and a Nimbus server's answers carry the hint.
@Suite("Reading a zone's feed ahead")
struct FeedReadAheadTests {
    /// Page `n` of `count` (page 1 is asked for with no token, page n with `t(n-1)`).
    static func page(_ n: Int, of count: Int) -> RecordZoneChanges {
        RecordZoneChanges(modifications: [], deletions: [], changeToken: token(n), moreComing: n < count)
    }

    static func token(_ n: Int) -> ServerChangeToken { ServerChangeToken(rawValue: "t\(n)") }

    /// The page a token asks for, or `nil` for a token no page issued.
    static func number(askedWith token: ServerChangeToken?) -> Int? {
        guard let token else { return 1 }
        guard token.rawValue.hasPrefix("t"), let previous = Int(token.rawValue.dropFirst()) else { return nil }
        return previous + 1
    }

    static func feed(
        count: Int, depth: Int = FeedReadAhead<RecordZoneChanges>.defaultDepth, hint: @escaping @Sendable (Int) -> ServerChangeToken? = { _ in nil },
        asked: @escaping @Sendable (Int?) async throws -> Void = { _ in },
        reading: @escaping @Sendable (Int) async throws -> Void = { _ in }
    ) -> FeedReadAhead<RecordZoneChanges> {
        FeedReadAhead(
            from: nil, depth: depth,
            request: { token, _ in
                let n = number(askedWith: token)
                try await asked(n)
                guard let n else {
                    // Asked with a token no page issued: an answer the caller must never see.
                    return RecordZoneChangesAnswer(
                        RecordZoneChanges(modifications: [], deletions: [], changeToken: .init(rawValue: "bogus"), moreComing: false))
                }
                let page = page(n, of: count)
                return RecordZoneChangesAnswer(page, nextTokenHint: page.moreComing ? hint(n) ?? page.changeToken : nil)
            },
            read: { answer in
                let page = try await answer.read()
                try await reading(number(askedWith: page.changeToken)! - 1)
                return page
            },
            next: { $0.moreComing ? $0.changeToken : nil })
    }

    static func drain(_ feed: inout FeedReadAhead<RecordZoneChanges>, before: () async throws -> Void = {}) async throws
        -> [String]
    {
        var tokens: [String] = []
        while true {
            try await before()
            guard let page = try await feed.next() else { return tokens }
            tokens.append(page.changeToken.rawValue)
        }
    }

    @Test func theNextPageIsAskedForBeforeThisOneIsRead() async throws {
        let asked = Signals()
        let tokens = try await withTimeout("the feed", .seconds(20)) {
            var feed = Self.feed(
                count: 5, asked: { n in await asked.fire(n ?? 0) },
                // Each read waits for the next page's request: without the read-ahead, it never comes.
                reading: { n in if n < 5 { try await asked.wait(n + 1) } })
            defer { feed.cancel() }
            return try await Self.drain(&feed)
        }
        #expect(tokens == ["t1", "t2", "t3", "t4", "t5"])
    }

    /// With depth d, after the caller took page k, pages k + 1 … k + d are read and page
    /// k + d + 1 is asked for; no page after it, however long the caller waits.
    @Test(arguments: [1, 3])
    func neverMoreThanItsDepthAheadOfTheCaller(depth: Int) async throws {
        let calls = Locked(0)
        let asked = Signals()
        let count = 12
        let tokens = try await withTimeout("the feed", .seconds(20)) {
            var feed = Self.feed(
                count: count, depth: depth,
                asked: { n in
                    let n = try #require(n)
                    let taken = calls.withLock { $0 }
                    #expect(n <= taken + depth + 1, "page \(n) asked for with \(taken) calls of next(), depth \(depth)")
                    await asked.fire(n)
                })
            defer { feed.cancel() }
            var tokens: [String] = []
            while true {
                let taken = calls.withLock { value -> Int in
                    value += 1
                    return value
                }
                guard let page = try await feed.next() else { return tokens }
                tokens.append(page.changeToken.rawValue)
                #expect(feed.pagesReadAhead == depth, "after page \(taken)")
                // Let the read-ahead run as far as it will before the next call: it reaches
                // page taken + depth + 1 (so a feed that stopped short fails by timing out).
                if taken + depth + 1 <= count { try await asked.wait(taken + depth + 1) }
            }
        }
        #expect(tokens == (1...count).map { "t\($0)" })
    }

    /// `nextIfRead()` takes a page only once it is read, never waits, and after the last page
    /// gives nothing.
    @Test func aPageAlreadyReadIsTakenWithoutWaiting() async throws {
        let asked = Signals(), released = Signals()
        try await withTimeout("the feed", .seconds(20)) {
            var feed = Self.feed(
                count: 4, asked: { n in await asked.fire(n ?? 0) },
                reading: { n in if n == 2 { try await released.wait(2) } })
            defer { feed.cancel() }
            #expect(try await feed.next()?.changeToken.rawValue == "t1")
            // Page 2's read is held: there is nothing to take yet.
            #expect(feed.nextIfRead() == nil)
            await released.fire(2)
            // Page 4 is asked for by page 3's read, which starts only after page 2's ended.
            try await asked.wait(4)
            #expect(feed.nextIfRead()?.changeToken.rawValue == "t2")
            #expect(try await feed.next()?.changeToken.rawValue == "t3")
            #expect(try await feed.next()?.changeToken.rawValue == "t4")
            #expect(feed.nextIfRead() == nil)
            #expect(try await feed.next() == nil)
        }
    }

    @Test func aPageAskedForWithAWrongHintIsDroppedAndAskedForAgain() async throws {
        let asked = Locked<[Int?]>([])
        let tokens = try await withTimeout("the feed", .seconds(20)) {
            var feed = Self.feed(
                count: 4, hint: { n in ServerChangeToken(rawValue: "wrong\(n)") },
                asked: { n in asked.withLock { $0.append(n) } })
            defer { feed.cancel() }
            return try await Self.drain(&feed)
        }
        #expect(tokens == ["t1", "t2", "t3", "t4"])
        #expect(asked.withLock { $0.compactMap { $0 } }.sorted() == [1, 2, 3, 4])
    }

    @Test func anErrorEndsTheFeedAndCancellingStopsTheRequestInFlight() async throws {
        try await withTimeout("the feeds", .seconds(20)) {
            var failing = Self.feed(
                count: 4, asked: { n in if n == 3 { throw NimbusError(.changeTokenExpired, "expired") } })
            #expect(try await failing.next()?.changeToken.rawValue == "t1")
            #expect(try await failing.next()?.changeToken.rawValue == "t2")
            await #expect(throws: NimbusError.self) { try await failing.next() }
            #expect(try await failing.next() == nil)

            let never = Signals(), stopped = Signals()
            var hanging = Self.feed(
                count: 4,
                asked: { n in
                    guard n == 2 else { return }
                    // Page 2's request is never answered: it ends only when cancelled.
                    do { try await never.wait(0) } catch {
                        await stopped.fire(2)
                        throw error
                    }
                })
            #expect(try await hanging.next()?.changeToken.rawValue == "t1")
            hanging.cancel()
            try await stopped.wait(2)
        }
    }

    @Test(arguments: Engine.available)
    func aServersAnswersNameTheNextPagesToken(engine: Engine) async throws {
        try await LiveServer.with(engine: engine) { server in
            let database = try await server.container(user: "ada").privateCloudDatabase
            let zone = ZoneID(zoneName: "Feed")
            _ = try await database.save(RecordZone(zoneID: zone))
            _ = try await database.modifyRecords(
                saving: (0..<5).map { Record(recordType: "Note", recordID: Record.ID(recordName: "n\($0)", zoneID: zone)) })
            var token: ServerChangeToken?
            var names: [String] = []
            while true {
                let answer = try await database.recordZoneChangesAnswer(
                    inZoneWith: zone, since: token, resultsLimit: 2, countingRemaining: token == nil)
                let page = try await answer.read()
                names += page.modifications.map(\.id.recordName)
                #expect(answer.nextTokenHint == (page.moreComing ? page.changeToken : nil))
                token = page.changeToken
                if !page.moreComing { break }
            }
            #expect(names.sorted() == ["n0", "n1", "n2", "n3", "n4"])
        }
    }
}

/// Numbered events a test can wait for, from any task; a wait ends when its task is cancelled.
actor Signals {
    private var fired: Set<Int> = []
    private var waiters: [Int: [UUID: CheckedContinuation<Void, Never>]] = [:]
    private var cancelled: Set<UUID> = []

    func fire(_ n: Int) {
        fired.insert(n)
        for waiter in (waiters.removeValue(forKey: n) ?? [:]).values { waiter.resume() }
    }

    func wait(_ n: Int) async throws {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                if fired.contains(n) || cancelled.contains(id) || Task.isCancelled {
                    continuation.resume()
                } else {
                    waiters[n, default: [:]][id] = continuation
                }
            }
        } onCancel: {
            Task { await self.cancel(id, waitingFor: n) }
        }
        cancelled.remove(id)
        if !fired.contains(n) { try Task.checkCancellation() }
    }

    private func cancel(_ id: UUID, waitingFor n: Int) {
        if let waiter = waiters[n]?.removeValue(forKey: id) {
            waiter.resume()
        } else {
            // Cancelled before it waited: the wait ends as soon as it starts.
            cancelled.insert(id)
        }
    }
}
