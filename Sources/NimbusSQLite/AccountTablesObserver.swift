import GRDB
import NimbusStore

/// Watches the SQLite store's writer for commits that change what a token lookup reads, and
/// ends the ``TokenLookupCache``'s answers they touch when one commits.
///
/// GRDB calls it on the writer's queue, one transaction at a time, so its state needs no
/// lock; the class is not `Sendable` and never leaves that queue. The tables it watches are
/// rowid tables (SQLite reports no row changes of a `WITHOUT ROWID` table; a test checks each),
/// and no foreign key cascades into them, so every change to them is an event it sees.
final class AccountTablesObserver: TransactionObserver {
    /// The tables ``SQLiteStore/lookUpTokens(apiToken:webAuthToken:)`` reads.
    static let tables: Set<String> = ["tokens", "sessions", "users", "user_identities"]

    private let cache: TokenLookupCache
    /// Rows the transaction updated or deleted.
    private var rows: Set<TokenLookupCache.Row> = []
    /// The transaction inserted a row: every answer ends (cheap to be safe; sign-ins and new
    /// tokens are rare next to requests).
    private var inserted = false

    init(cache: TokenLookupCache) {
        self.cache = cache
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        Self.tables.contains(eventKind.tableName)
    }

    func databaseDidChange(with event: DatabaseEvent) {
        switch event.kind {
        case .insert:
            inserted = true
            // Everything ends at the commit: the rest of the transaction need not be seen.
            stopObservingDatabaseChangesUntilNextTransaction()
        case .update, .delete:
            rows.insert(TokenLookupCache.Row(table: event.tableName, rowID: event.rowID))
        }
    }

    func databaseDidCommit(_ db: Database) {
        if inserted {
            cache.invalidateAll()
        } else if !rows.isEmpty {
            cache.invalidate(rows: rows)
        }
        reset()
    }

    func databaseDidRollback(_ db: Database) {
        reset()
    }

    private func reset() {
        rows = []
        inserted = false
    }
}
