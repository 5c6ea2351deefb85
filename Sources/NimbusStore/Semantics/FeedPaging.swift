import NimbusProtocol

/// How every change feed cuts a page (records, zones, the database's zones, notifications),
/// alike on every engine.
///
/// ```swift
/// let rows = readEntries(after: since, orderedByPosition: true, limit: FeedPaging.readLimit(limit))
/// let page = FeedPaging.cut(rows, limit: limit, since: since, head: databaseVersion, position: \.version)
/// return Page(entries: page.entries, token: token(at: page.tokenPosition), moreComing: page.moreComing)
/// ```
///
/// An engine reads one entry more than the page holds, in feed order: the extra entry says
/// more are coming and is left out. The page's token then holds the last entry's position
/// (the next page starts after it); a last page's token holds the feed's head, so a reader
/// that comes back later skips nothing and rereads nothing. A limit below 1 is read as 1: a
/// full page always has a last entry to take the token from.
public enum FeedPaging {
    /// How many entries to read for a page of `limit`: one past the page.
    public static func readLimit(_ limit: Int) -> Int { pageLimit(limit) + 1 }

    /// The page's size for a requested `limit` (at least 1).
    public static func pageLimit(_ limit: Int) -> Int { max(limit, 1) }

    /// A page cut from `entries` (read in feed order with ``readLimit(_:)``).
    ///
    /// - Parameters:
    ///   - since: the position the reader's token held (0 with none).
    ///   - head: the feed's newest position when it was read (the database's version, the
    ///     recipient's last sequence number).
    ///   - position: an entry's position in the feed.
    public static func cut<Entry>(
        _ entries: [Entry], limit: Int, since: Int64, head: Int64, position: (Entry) -> Int64
    ) -> (entries: [Entry], moreComing: Bool, tokenPosition: Int64) {
        let limit = pageLimit(limit)
        guard entries.count > limit else { return (entries, false, max(since, head)) }
        let page = Array(entries.prefix(limit))
        return (page, true, position(page[page.count - 1]))
    }
}

extension FeedRules {
    /// Checks a zone feed's token (`zones/changes`, `changes/database`) at `since` against
    /// the database: ahead of its `head` (its version), or older than its `horizon` (deleted
    /// zones compacted up to it), the token is CHANGE_TOKEN_EXPIRED.
    public static func checkZoneToken(since: Int64, head: Int64, horizon: Int64) throws(CloudKitError) {
        if since > head { throw tokenAhead() }
        if since > 0 && since < horizon { throw zoneTokenExpired }
    }

    /// Checks a notification collection token at `since` against the recipient's
    /// notifications: ahead of the last sequence number, or older than the compacted
    /// `horizon`, the token is CHANGE_TOKEN_EXPIRED.
    public static func checkNotificationToken(since: Int64, given: Bool, last: Int64, horizon: Int64)
        throws(CloudKitError)
    {
        if since > last { throw tokenAhead() }
        if given && since < horizon { throw notificationTokenExpired }
    }
}
