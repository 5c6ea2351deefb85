import NIOConcurrencyHelpers

/// The token lookups a store answered lately, so that a request whose tokens were just seen
/// is authenticated without a database read.
///
/// Every API request looks its tokens up (``AccountStore/lookUpTokens(apiToken:webAuthToken:)``);
/// on SQLite that read, a trip to a reader thread and back, was about a sixth of a
/// single-record modify's time (docs/PERFORMANCE.md, "Token lookups from memory").
///
/// What keeps an answer true:
/// - **Changes through the store** end the answers they touch at once: an answer keeps the
///   rows it was read from (the API token's, the session's, the user's, the identity's), and the
///   store calls ``invalidate(rows:)`` with the rows a commit updated or deleted — a revoked
///   token or session, an edited user — or ``invalidateAll()`` when a commit inserted into
///   those tables. A session's "last seen" write ends that session's answers only, so a busy
///   server keeps its other answers.
/// - **Changes the store cannot see** — another process writing the same file (`nimbus session
///   revoke` beside a running server) — are seen when the answer expires, ``lifetimeMillis``
///   after it was read. (PostgreSQL's store hears other nodes' changes from the tables'
///   triggers instead, and keeps answers only while it listens: see its `lookUpTokens`.)
/// - **An answer read before a change and stored after it** is not kept: the store passes the
///   ``generation`` taken before its read, and any invalidation since refuses the answer.
///
/// Only complete answers are kept (a known API token, and a known web auth token when one was
/// given), so unknown or revoked tokens — a client guessing — never fill the cache and are
/// always read again. At ``capacity`` answers the cache starts over.
package final class TokenLookupCache: Sendable {
    /// How long an answer is served, in milliseconds of the store's clock.
    package static let lifetimeMillis: Int64 = 1_000
    /// The most answers kept.
    package static let capacity = 10_000

    /// A stored row an answer was read from: its table and a key that names it there (a
    /// SQLite rowid, a PostgreSQL session's id).
    package struct Row: Hashable, Sendable {
        package var table: String
        package var key: String

        package init(table: String, key: String) {
            self.table = table
            self.key = key
        }

        package init(table: String, rowID: Int64) {
            self.init(table: table, key: String(rowID))
        }
    }

    private struct Key: Hashable {
        var apiToken: String
        var webAuthToken: String?
    }

    private struct Entry {
        var lookup: TokenLookup
        var rows: [Row]
        var readAt: Int64

        /// Fresh at `now`: read less than ``lifetimeMillis`` before it, and not after it (a
        /// clock set back must not stretch an answer's life).
        func isFresh(at now: Int64) -> Bool { now >= readAt && now - readAt < TokenLookupCache.lifetimeMillis }
    }

    private struct State {
        var generation: UInt64 = 0
        var entries: [Key: Entry] = [:]
        var keysByRow: [Row: Set<Key>] = [:]

        mutating func remove(_ key: Key) {
            guard let entry = entries.removeValue(forKey: key) else { return }
            for row in entry.rows {
                keysByRow[row]?.remove(key)
                if keysByRow[row]?.isEmpty == true { keysByRow[row] = nil }
            }
        }
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    /// The generation to read under: take it before the read starts, pass it to
    /// ``store(_:rows:apiToken:webAuthToken:generation:now:)`` after.
    package var generation: UInt64 { state.withLockedValue { $0.generation } }

    /// How many answers are kept.
    package var count: Int { state.withLockedValue { $0.entries.count } }

    /// The answer for these tokens, if one is kept and still fresh.
    package func lookup(apiToken: String, webAuthToken: String?, now: Int64) -> TokenLookup? {
        state.withLockedValue { state in
            guard let entry = state.entries[Key(apiToken: apiToken, webAuthToken: webAuthToken)], entry.isFresh(at: now)
            else { return nil }
            return entry.lookup
        }
    }

    /// Keeps a complete answer read from `rows` under `generation`; an answer read before an
    /// invalidation since, or an incomplete one, is not kept.
    package func store(
        _ lookup: TokenLookup, rows: [Row], apiToken: String, webAuthToken: String?, generation: UInt64, now: Int64
    ) {
        guard lookup.container != nil, webAuthToken == nil || lookup.user != nil else { return }
        state.withLockedValue { state in
            guard generation == state.generation else { return }
            let key = Key(apiToken: apiToken, webAuthToken: webAuthToken)
            state.remove(key)
            if state.entries.count >= Self.capacity { state = State(generation: state.generation) }
            state.entries[key] = Entry(lookup: lookup, rows: rows, readAt: now)
            for row in rows { state.keysByRow[row, default: []].insert(key) }
        }
    }

    /// Ends the answers read from any of `rows` (rows a commit updated or deleted).
    package func invalidate(rows: Set<Row>) {
        state.withLockedValue { state in
            state.generation &+= 1
            for row in rows {
                for key in state.keysByRow[row] ?? [] { state.remove(key) }
            }
        }
    }

    /// Ends every answer kept (a commit inserted rows into a table answers are read from).
    package func invalidateAll() {
        state.withLockedValue { state in state = State(generation: state.generation &+ 1) }
    }
}
