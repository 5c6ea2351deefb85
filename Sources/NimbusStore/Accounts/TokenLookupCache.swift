import NIOConcurrencyHelpers

/// The token lookups a store answered lately, so that a request whose tokens were just seen
/// is authenticated without a database read.
///
/// Every API request looks its tokens up (``AccountStore/lookUpTokens(apiToken:webAuthToken:)``);
/// on SQLite that read, a trip to a reader thread and back, was about a fifth of a
/// single-record modify's time (docs/PERFORMANCE.md, "Token lookups from memory").
///
/// What keeps an answer true:
/// - **Changes through the store** end every cached answer at once: the store calls
///   ``invalidate()`` when it commits a change to a table a lookup reads (tokens, sessions,
///   users, identities), so a revoked token or session is refused by the next request.
/// - **Changes the store cannot see** — another process writing the same file (`nimbus session
///   revoke` beside a running server) — are seen when the answer expires, ``lifetimeMillis``
///   after it was read.
/// - **An answer read before a change and stored after it** is never served: an entry keeps
///   the generation it was read under (taken *before* the read began), and only entries of
///   the current generation are served.
///
/// Only complete answers are kept (a known API token, and a known web auth token when one was
/// given), so unknown or revoked tokens — a client guessing — never fill the cache and are
/// always read again. At ``capacity`` entries the cache starts over.
package final class TokenLookupCache: Sendable {
    /// How long an answer is served, in milliseconds of the store's clock.
    package static let lifetimeMillis: Int64 = 1_000
    /// The most answers kept.
    package static let capacity = 10_000

    private struct Key: Hashable {
        var apiToken: String
        var webAuthToken: String?
    }

    private struct Entry {
        var lookup: TokenLookup
        var generation: UInt64
        var expiresAt: Int64
    }

    private struct State {
        var generation: UInt64 = 0
        var entries: [Key: Entry] = [:]
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    /// The generation to read under: take it before the read starts, pass it to
    /// ``store(_:apiToken:webAuthToken:generation:now:)`` after.
    package var generation: UInt64 { state.withLockedValue { $0.generation } }

    /// The answer for these tokens, if one of the current generation has not expired.
    package func lookup(apiToken: String, webAuthToken: String?, now: Int64) -> TokenLookup? {
        state.withLockedValue { state in
            guard let entry = state.entries[Key(apiToken: apiToken, webAuthToken: webAuthToken)],
                entry.generation == state.generation, entry.expiresAt > now
            else { return nil }
            return entry.lookup
        }
    }

    /// Keeps a complete answer read under `generation`; an answer read before a change the
    /// store has since committed, or an incomplete one, is not kept.
    package func store(_ lookup: TokenLookup, apiToken: String, webAuthToken: String?, generation: UInt64, now: Int64) {
        guard lookup.container != nil, webAuthToken == nil || lookup.user != nil else { return }
        state.withLockedValue { state in
            guard generation == state.generation else { return }
            if state.entries.count >= Self.capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[Key(apiToken: apiToken, webAuthToken: webAuthToken)] = Entry(
                lookup: lookup, generation: generation, expiresAt: now + Self.lifetimeMillis)
        }
    }

    /// Ends every answer kept: a table a lookup reads has changed.
    package func invalidate() {
        state.withLockedValue { state in
            state.generation &+= 1
            state.entries.removeAll(keepingCapacity: true)
        }
    }
}
