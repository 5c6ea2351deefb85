import GRDB

/// Watches the SQLite store's writer for commits that change what a token lookup reads, and
/// ends the ``TokenLookupCache``'s answers when one does.
///
/// GRDB calls it on the writer's queue, one transaction at a time, so `changed` needs no lock;
/// the class is not `Sendable` and never leaves that queue. No table a lookup reads is changed
/// by a foreign key's cascade (none points at them with `ON DELETE CASCADE`), so every change to
/// them is a statement this observer sees.
final class AccountTablesObserver: TransactionObserver {
    /// The tables ``SQLiteStore/lookUpTokens(apiToken:webAuthToken:)`` reads.
    static let tables: Set<String> = ["tokens", "sessions", "users", "user_identities"]

    private let cache: TokenLookupCache
    private var changed = false

    init(cache: TokenLookupCache) {
        self.cache = cache
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        Self.tables.contains(eventKind.tableName)
    }

    func databaseDidChange(with event: DatabaseEvent) {
        changed = true
        // One changed row is enough to know; the rest of the transaction goes unobserved.
        stopObservingDatabaseChangesUntilNextTransaction()
    }

    func databaseDidCommit(_ db: Database) {
        if changed { cache.invalidate() }
        changed = false
    }

    func databaseDidRollback(_ db: Database) {
        changed = false
    }
}
