import Foundation
import GRDB
import Nimbus
import NimbusProtocol
import NimbusSync

/// The Reading List app model on one device: its edits go to the local store and the
/// outbox in one transaction, its reads come from the local store (never the network), and
/// a ``SyncEngine`` keeps the store in sync with the user's private database.
///
/// ```swift
/// let list = ReadingList(engine: engine)
/// let bookmark = try list.add(url: "https://example.com/sync", title: "Sync is hard")
/// try await list.send()                     // or let `sync()` do it
/// for bookmark in try list.bookmarks() { print(bookmark.title) }
/// ```
public final class ReadingList: Sendable {
    public let engine: SyncEngine
    /// Milliseconds since the epoch, for `addedAt`, `lastReadAt` and `editedAt`.
    let now: @Sendable () -> Int64

    public var store: LocalStore { engine.store }

    public init(engine: SyncEngine, now: @escaping @Sendable () -> Int64 = ReadingList.wallClock) {
        self.engine = engine
        self.now = now
    }

    /// The wall clock in milliseconds since the epoch.
    public static let wallClock: @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    // MARK: - Reading (local, no network)

    /// The bookmarks, oldest first.
    public func bookmarks() throws -> [Bookmark] {
        try store.read { db in try Self.bookmarks(db) }
    }

    /// The reading history, by article.
    public func history() throws -> [ReadState] {
        try store.read { db in try Self.history(db) }
    }

    /// Bookmarks, history and the number of unsent changes, read in one transaction.
    public func snapshot() throws -> ReadingListSnapshot {
        try store.read { db in try Self.snapshot(db) }
    }

    static func bookmarks(_ db: GRDB.Database) throws -> [Bookmark] {
        try LocalStore.records(in: db, zone: ReadingListSchema.bookmarksZone).compactMap(Bookmark.init)
            .sorted { ($0.addedAt, $0.id) < ($1.addedAt, $1.id) }
    }

    static func history(_ db: GRDB.Database) throws -> [ReadState] {
        try LocalStore.records(in: db, zone: ReadingListSchema.historyZone).compactMap(ReadState.init)
    }

    static func snapshot(_ db: GRDB.Database) throws -> ReadingListSnapshot {
        ReadingListSnapshot(
            bookmarks: try bookmarks(db), history: try history(db),
            pending: try LocalStore.pendingCount(in: db))
    }

    /// How many records of a zone this device holds a server copy of (a cheap count; no
    /// records are decoded).
    public func syncedRecordCount(zone: String) throws -> Int {
        try store.read { db in try LocalStore.serverCopyCount(in: db, zone: zone) }
    }

    /// The bookmark an argument names: its ID, a unique prefix of it, or its URL.
    public func bookmark(_ reference: String) throws -> Bookmark {
        try store.read { db in try Self.resolve(reference, in: try Self.bookmarks(db)) }
    }

    static func resolve(_ reference: String, in bookmarks: [Bookmark]) throws -> Bookmark {
        if let exact = bookmarks.first(where: { $0.id == reference || $0.url == reference }) { return exact }
        let matches = bookmarks.filter { $0.id.hasPrefix(reference) }
        guard !reference.isEmpty, let match = matches.first else { throw ReadingListError.noSuchBookmark(reference) }
        guard matches.count == 1 else { throw ReadingListError.ambiguous(reference, matches.map(\.id)) }
        return match
    }

    // MARK: - Editing (local store + outbox in one transaction; no network)

    /// Bookmarks an article; bookmarking it again changes its title (and thumbnail) if one
    /// is given.
    ///
    /// - Parameter thumbnail: a picture file for the article. It is uploaded with the
    ///   bookmark's next send (before the bookmark, which never reaches the server without
    ///   it), so it must stay in place until then: pass a copy the app owns.
    @discardableResult
    public func add(url: String, title: String? = nil, thumbnail: URL? = nil) throws -> Bookmark {
        let url = url.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !url.isEmpty else { throw ReadingListError.invalidURL(url) }
        let id = Bookmark.id(for: url)
        let time = now()
        return try store.write { db, outbox in
            var bookmark: Bookmark
            if let existing = try outbox.record(zone: ReadingListSchema.bookmarksZone, name: id).flatMap(Bookmark.init) {
                bookmark = existing
                let retitled = title.map { $0 != existing.title } ?? false
                guard retitled || thumbnail != nil else { return existing }
                bookmark.title = title ?? existing.title
                bookmark.editedAt = time
            } else {
                bookmark = Bookmark(
                    id: id, url: url, title: title ?? Self.defaultTitle(for: url), addedAt: time, editedAt: time)
            }
            if let thumbnail { bookmark.thumbnail = Nimbus.Asset(fileURL: thumbnail) }
            try outbox.save(bookmark.record)
            bookmark.isPending = true
            return bookmark
        }
    }

    /// Renames a bookmark (the later rename wins a conflict).
    @discardableResult
    public func rename(_ reference: String, title: String) throws -> Bookmark {
        let time = now()
        return try store.write { db, outbox in
            var bookmark = try Self.resolve(reference, in: try Self.bookmarks(db))
            bookmark.title = title
            bookmark.editedAt = max(time, bookmark.editedAt + 1)
            try outbox.save(bookmark.record)
            bookmark.isPending = true
            return bookmark
        }
    }

    /// Removes a bookmark (its reading history stays).
    @discardableResult
    public func remove(_ reference: String) throws -> Bookmark {
        try store.write { db, outbox in
            let bookmark = try Self.resolve(reference, in: try Self.bookmarks(db))
            try outbox.delete(zone: ReadingListSchema.bookmarksZone, recordName: bookmark.id)
            return bookmark
        }
    }

    /// Marks an article read: one more read on its counter. `reference` names a bookmark
    /// (ID, prefix or URL), or is the URL of an article that is not bookmarked.
    @discardableResult
    public func markRead(_ reference: String) throws -> ReadState {
        typealias F = ReadingListSchema.HistoryField
        let time = now()
        return try store.write { db, outbox in
            let (id, url): (String, String)
            do {
                let bookmark = try Self.resolve(reference, in: try Self.bookmarks(db))
                (id, url) = (bookmark.id, bookmark.url)
            } catch ReadingListError.noSuchBookmark where reference.contains("://") {
                (id, url) = (Bookmark.id(for: reference), reference)
            }
            // Read and write in the same transaction, so no fetch slips between and the
            // increment is always counted from what this device last saw.
            var record =
                try outbox.record(zone: ReadingListSchema.historyZone, name: id)
                ?? LocalRecord(
                    zoneName: ReadingListSchema.historyZone, recordName: id, recordType: ReadingListSchema.historyType,
                    fields: [F.url: .string(url), F.readCount: .int64(0)])
            let edited = max(time, (record[F.editedAt]?.timestampValue ?? 0) + 1)
            record[F.readCount] = .int64((record[F.readCount]?.int64Value ?? 0) + 1)
            record[F.lastReadAt] = .timestamp(time)
            record[F.editedAt] = .timestamp(edited)
            try outbox.save(record)
            record.isPending = true
            return ReadState(record)!
        }
    }

    static func defaultTitle(for url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.host else { return url }
        let last = components.path.split(separator: "/").last.map(String.init) ?? ""
        return last.isEmpty ? host : "\(host): \(last)"
    }

    // MARK: - Syncing

    /// The launch sequence: setup (zones, subscription; once), fetch what changed, send
    /// the outbox.
    public func sync() async throws {
        try await engine.start()
    }

    /// Sends pending changes.
    public func send() async throws {
        try await engine.sendChanges()
    }

    /// Fetches what changed in the database (the changed zones only).
    public func fetch() async throws {
        try await engine.fetchChanges()
    }

    /// Pull-to-refresh: fetches one zone's changes only.
    public func refresh(zone: String = ReadingListSchema.bookmarksZone) async throws {
        guard ReadingListSchema.zones.contains(zone) else { throw ReadingListError.unknownZone(zone) }
        try await engine.refresh(zone: zone)
    }

    /// The file of a bookmark's thumbnail: on the device that added it, its own file; on the
    /// others, downloaded on first use into the engine's cache (records sync first, pictures
    /// only when they are shown). `nil` when the bookmark has no thumbnail.
    public func thumbnail(of reference: String) async throws -> URL? {
        let bookmark = try self.bookmark(reference)
        guard let record = try store.record(zone: ReadingListSchema.bookmarksZone, name: bookmark.id) else { return nil }
        return try await engine.assetFile(for: record, field: ReadingListSchema.BookmarkField.thumbnail)
    }

    // MARK: - Observing

    /// The list as it changes: the current snapshot first, then one after every change of
    /// the local store (a fetch applying a push, a local edit, a send). Changes committed
    /// after this call returns are never missed.
    public func snapshots() -> AsyncThrowingStream<ReadingListSnapshot, any Error> {
        let store = self.store
        // Subscribed before this returns, so no later commit is missed.
        let changes = store.changes()
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    var last = try await store.read { db in try Self.snapshot(db) }
                    continuation.yield(last)
                    for await changed in changes where changed.contains(where: { ReadingListSchema.zones.contains($0.zoneName) }) {
                        let snapshot = try await store.read { db in try Self.snapshot(db) }
                        if snapshot != last { continuation.yield(snapshot) }
                        last = snapshot
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Waits until the local store satisfies `condition` (checked now and after every
    /// change), and returns that snapshot; throws ``ReadingListError/timedOut(_:)`` after
    /// `timeout`.
    @discardableResult
    public func waitUntil(
        _ what: String = "the reading list", timeout: Duration = .seconds(10),
        _ condition: @escaping @Sendable (ReadingListSnapshot) -> Bool
    ) async throws -> ReadingListSnapshot {
        try await arrival(of: what, timeout: timeout, where: condition).value().snapshot
    }

    /// Starts watching the local store for `condition` and returns once the watch is live,
    /// so an action started afterwards cannot be missed; ``Arrival/value()`` then gives
    /// the first snapshot that satisfies it and when it was seen.
    ///
    /// ```swift
    /// let onB = try await deviceB.readingList.arrival(of: "the bookmark") { $0.bookmark(id) != nil }
    /// let start = ContinuousClock.now
    /// try deviceA.readingList.add(url: url); try await deviceA.readingList.send()
    /// let latency = try await onB.value().at - start
    /// ```
    public func arrival(
        of what: String, timeout: Duration = .seconds(10),
        where condition: @escaping @Sendable (ReadingListSnapshot) -> Bool
    ) async throws -> Arrival {
        let snapshots = snapshots()
        let (live, liveContinuation) = AsyncStream<Void>.makeStream()
        let task = Task {
            try await withThrowingTaskGroup(of: Arrival.Seen.self) { group in
                group.addTask {
                    for try await snapshot in snapshots {
                        let seen = Arrival.Seen(snapshot: snapshot, at: .now)
                        liveContinuation.finish()
                        if condition(snapshot) { return seen }
                    }
                    throw ReadingListError.timedOut(what)
                }
                group.addTask {
                    defer { liveContinuation.finish() }
                    try await Task.sleep(for: timeout)
                    throw ReadingListError.timedOut(what)
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        }
        for await _ in live {}
        return Arrival(task: task)
    }
}

/// The first snapshot of a device's store that satisfies a condition (see
/// ``ReadingList/arrival(of:timeout:where:)``).
public struct Arrival: Sendable {
    public struct Seen: Sendable {
        public var snapshot: ReadingListSnapshot
        /// When the store was seen satisfying the condition.
        public var at: ContinuousClock.Instant
    }

    let task: Task<Seen, any Error>

    public func value() async throws -> Seen { try await task.value }

    /// Stops watching.
    public func cancel() { task.cancel() }
}

/// What the Reading List holds on a device at one moment.
public struct ReadingListSnapshot: Sendable, Hashable {
    public var bookmarks: [Bookmark]
    public var history: [ReadState]
    /// Local changes not sent yet.
    public var pending: Int

    public init(bookmarks: [Bookmark] = [], history: [ReadState] = [], pending: Int = 0) {
        self.bookmarks = bookmarks
        self.history = history
        self.pending = pending
    }

    public func bookmark(_ id: String) -> Bookmark? { bookmarks.first { $0.id == id } }
    public func readState(_ id: String) -> ReadState? { history.first { $0.id == id } }
}

public enum ReadingListError: Error, CustomStringConvertible, Equatable {
    case noSuchBookmark(String)
    case ambiguous(String, [String])
    case invalidURL(String)
    case unknownZone(String)
    case notInitialized(String)
    case timedOut(String)
    case unreadableFile(String)

    public var description: String {
        switch self {
        case .noSuchBookmark(let reference): return "no bookmark matches '\(reference)'"
        case .ambiguous(let reference, let ids):
            return "'\(reference)' matches several bookmarks: \(ids.joined(separator: ", "))"
        case .invalidURL(let url): return "not a URL: '\(url)'"
        case .unknownZone(let zone):
            return "unknown zone '\(zone)' (expected \(ReadingListSchema.zones.joined(separator: " or ")))"
        case .notInitialized(let directory):
            return "\(directory) is not a Reading List device; run `reading-list init` first"
        case .timedOut(let what): return "timed out waiting for \(what)"
        case .unreadableFile(let path): return "cannot read the file '\(path)'"
        }
    }
}
