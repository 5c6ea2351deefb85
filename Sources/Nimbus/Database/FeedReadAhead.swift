/// A zone's change feed read ahead of the code that applies it, for the sync engines: while
/// the caller applies page k, page k + 1 is read into records and the server builds page
/// k + 2 (its request starts as soon as page k + 1's answer names its token, before that
/// answer's records are read: ``RecordZoneChangesAnswer/nextTokenHint``).
///
/// Bounded: a page's request starts only when the caller has taken the page two before it,
/// so at most three pages are in hand (one applied, one read, one asked for).
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

    /// A page read, and the request for the one after it when its hint held.
    private struct Stage: Sendable {
        var page: Page
        var following: Task<RecordZoneChangesAnswer, any Error>?
    }

    private let request: Request
    private let read: Read
    private let nextToken: Next
    private var reading: Task<Stage, any Error>?

    /// Starts reading from `token` (from the zone's first change when `nil`); `request` is
    /// called with `first` true for the first page only.
    package init(from token: ServerChangeToken?, request: @escaping Request, read: @escaping Read, next: @escaping Next) {
        self.request = request
        self.read = read
        self.nextToken = next
        reading = Self.reading(Task { try await request(token, true) }, request: request, read: read, next: next)
    }

    /// The next page, or `nil` after the last one (the page whose `next` is `nil`).
    package mutating func next() async throws -> Page? {
        guard let current = reading else { return nil }
        reading = nil
        // A caller cancelled while it waits cancels the read (and the request it waits on).
        let stage = try await withTaskCancellationHandler { try await current.value } onCancel: { current.cancel() }
        if let token = nextToken(stage.page) {
            let request = self.request
            let asked = stage.following ?? Task { try await request(token, false) }
            reading = Self.reading(asked, request: request, read: read, next: nextToken)
        }
        return stage.page
    }

    /// Stops every request and read in flight.
    package mutating func cancel() {
        guard let current = reading else { return }
        reading = nil
        current.cancel()
        // A read that already finished may hold the request after it.
        Task { (try? await current.value)?.following?.cancel() }
    }

    private static func reading(
        _ asked: Task<RecordZoneChangesAnswer, any Error>, request: @escaping Request, read: @escaping Read,
        next: @escaping Next
    ) -> Task<Stage, any Error> {
        Task {
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
}
