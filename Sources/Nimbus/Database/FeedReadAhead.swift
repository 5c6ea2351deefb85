/// A zone's change feed read ahead of the code that applies it, for the sync engines: while
/// the caller applies page k, pages k + 1 … k + `depth` are read into records, one after
/// another, and the server builds the page after the one being read (its request starts as
/// soon as the previous page's answer names its token, before that answer's records are
/// read: ``RecordZoneChangesAnswer/nextTokenHint``).
///
/// The depth lets the three stages (the server's page, the device's read of it, the apply)
/// run at their own pace on a machine with fewer cores than stages: a page read while the
/// apply is busy waits for it instead of holding the reader back. Bounded: at most
/// `depth` + 2 pages are in hand (one applied, `depth` read or being read, one asked for).
///
/// ```swift
/// var feed = FeedReadAhead(from: token, request: { token, first in
///     try await database.recordZoneChangesAnswer(inZoneWith: zone, since: token, countingRemaining: first)
/// }, read: { try await $0.read() }, next: { $0.moreComing ? $0.changeToken : nil })
/// defer { feed.cancel() }
/// while let page = try await feed.next() { try apply(page) }
/// ```
///
/// A page asked for with a hint is used only when the hint is the token the previous page's
/// read found; otherwise it is cancelled and the page is asked for again with that token.
/// After `next()` throws, the feed is spent: start a new one from the token to read from.
package struct FeedReadAhead<Page: Sendable> {
    package typealias Request = @Sendable (_ token: ServerChangeToken?, _ first: Bool) async throws -> RecordZoneChangesAnswer
    package typealias Read = @Sendable (RecordZoneChangesAnswer) async throws -> Page
    package typealias Next = @Sendable (Page) -> ServerChangeToken?

    /// How many pages are read ahead of the one the caller applies, unless told otherwise.
    package static var defaultDepth: Int { 3 }

    /// A page read, and the request for the one after it when its hint held.
    private struct Stage: Sendable {
        var page: Page
        var following: Task<RecordZoneChangesAnswer, any Error>?
    }

    /// Reads one page (`nil` when the page before it was the last), and keeps the page once
    /// read, so ``nextIfRead()`` can take it without waiting.
    private struct Reading: Sendable {
        let task: Task<Stage?, any Error>
        let read: Locked<Stage?>

        init(_ body: @escaping @Sendable () async throws -> Stage?) {
            let read = Locked<Stage?>(nil)
            self.read = read
            task = Task {
                let stage = try await body()
                read.withLock { $0 = stage }
                return stage
            }
        }

        func cancel() { task.cancel() }
    }

    private let request: Request
    private let read: Read
    private let nextToken: Next
    private let depth: Int
    /// The pages being read, in the feed's order: the first is the one `next()` returns.
    private var readings: [Reading] = []

    /// Starts reading from `token` (from the zone's first change when `nil`); `request` is
    /// called with `first` true for the first page only. `depth` (at least 1) pages are
    /// read ahead of the caller.
    package init(
        from token: ServerChangeToken?, depth: Int = Self.defaultDepth, request: @escaping Request,
        read: @escaping Read, next: @escaping Next
    ) {
        self.request = request
        self.read = read
        self.nextToken = next
        self.depth = max(1, depth)
        let asked = Task { try await request(token, true) }
        let first = Reading { try await Self.stage(asked, request: request, read: read, next: next) }
        readings = [first]
        fill(after: first)
    }

    /// The next page, or `nil` after the last one (the page whose `next` is `nil`).
    package mutating func next() async throws -> Page? {
        guard !readings.isEmpty else { return nil }
        let current = readings.removeFirst()
        let stage: Stage?
        do {
            // A caller cancelled while it waits cancels the read (and the request it waits on).
            stage = try await withTaskCancellationHandler { try await current.task.value } onCancel: { current.cancel() }
        } catch {
            cancel()
            throw error
        }
        guard let stage else {
            cancel()
            return nil
        }
        fill(after: current)
        return stage.page
    }

    /// How many records (in whole pages) the sync engines apply together at most
    /// (``pagesRead(after:upTo:records:)``).
    package static var recordsTogether: Int { 1_000 }

    /// `first` (the page ``next()`` gave) and the pages after it that are already read, taken
    /// without waiting while they hold fewer than `limit` records in all (`records` counts a
    /// page's). The sync engines apply them together: one transaction, one event, while the
    /// device is the slow stage.
    package mutating func pagesRead(
        after first: Page, upTo limit: Int = Self.recordsTogether, records: (Page) -> Int
    ) -> [Page] {
        var pages = [first]
        var count = records(first)
        while count < limit, let more = nextIfRead() {
            pages.append(more)
            count += records(more)
        }
        return pages
    }

    /// The next page if it is already read, without waiting; `nil` when it is not read yet,
    /// when its read failed (``next()`` throws that error), and after the last page.
    package mutating func nextIfRead() -> Page? {
        guard let current = readings.first, let stage = current.read.current else { return nil }
        readings.removeFirst()
        fill(after: current)
        return stage.page
    }

    /// How many pages are being read (or have been read) ahead of the caller: `depth`, until
    /// the feed is spent. Each holds one page, and the request for the page after it.
    package var pagesReadAhead: Int { readings.count }

    /// Stops every request and read in flight.
    package mutating func cancel() {
        let stopped = readings
        readings = []
        for reading in stopped { reading.cancel() }
        // A read that already finished may hold the request after it.
        if !stopped.isEmpty {
            Task { for reading in stopped { (try? await reading.task.value)??.following?.cancel() } }
        }
    }

    /// Starts reading pages after the last one being read (or after `taken`, the page just
    /// handed to the caller, when none is) until `depth` are.
    private mutating func fill(after taken: Reading) {
        var previous = readings.last ?? taken
        while readings.count < depth {
            let (request, read, next, after) = (self.request, self.read, self.nextToken, previous)
            let reading = Reading {
                // Cancelled with the feed: `previous` is cancelled too, and `stage` cancels
                // the request it would wait on.
                guard let stage = try await after.task.value, let token = next(stage.page) else { return nil }
                let asked = stage.following ?? Task { try await request(token, false) }
                return try await Self.stage(asked, request: request, read: read, next: next)
            }
            readings.append(reading)
            previous = reading
        }
    }

    /// Waits for `asked`'s answer, asks for the page after it by the answer's hint, and reads it.
    private static func stage(
        _ asked: Task<RecordZoneChangesAnswer, any Error>, request: @escaping Request, read: @escaping Read,
        next: @escaping Next
    ) async throws -> Stage {
        try await withTaskCancellationHandler {
            let answer = try await asked.value
            let hint = answer.nextTokenHint
            let following = hint.map { hint in Task { try await request(hint, false) } }
            do {
                let page = try await read(answer)
                try Task.checkCancellation()
                guard let following, let token = next(page), token == hint else {
                    following?.cancel()
                    return Stage(page: page, following: nil)
                }
                return Stage(page: page, following: following)
            } catch {
                following?.cancel()
                throw error
            }
        } onCancel: {
            asked.cancel()
        }
    }
}
