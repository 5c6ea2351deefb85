import GRDB

/// Notices committed transactions that wrote to the sync engine's tables.
///
/// GRDB's `ValueObservation` does not see those writes: the engine's tables are `WITHOUT
/// ROWID` tables, whose changes SQLite does not report to update hooks. The statement
/// authorizer still names every table a statement writes, and GRDB asks each transaction
/// observer about those tables before the statement runs: that is what this observer
/// records, and it reports each commit that touched one of them.
final class StoreChanges: TransactionObserver, @unchecked Sendable {
    static let engineTables: Set<String> = ["nimbus_records", "nimbus_outbox", "nimbus_zones", "nimbus_conflicts"]

    private let tables: Set<String>
    private let onCommit: @Sendable () -> Void
    /// Only touched on the database's writer queue.
    private var touched = false

    init(tables: Set<String> = StoreChanges.engineTables, onCommit: @escaping @Sendable () -> Void) {
        self.tables = tables
        self.onCommit = onCommit
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        if tables.contains(eventKind.tableName) { touched = true }
        return false
    }

    func databaseDidChange(with event: DatabaseEvent) {}

    func databaseDidCommit(_ db: GRDB.Database) {
        if touched { onCommit() }
        touched = false
    }

    func databaseDidRollback(_ db: GRDB.Database) {
        touched = false
    }
}
