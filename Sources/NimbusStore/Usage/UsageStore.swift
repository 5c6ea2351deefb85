/// What each database holds, as quotas count it (``DatabaseUsage``).
public protocol UsageStore: Sendable {
    /// The database's maintained counter: O(1), whatever the database's size. A database
    /// never written holds nothing.
    func usage(of database: DatabaseKey) async throws -> DatabaseUsage

    /// The database's usage counted again from its rows: O(database). The engine's schema
    /// migration fills the counters of existing databases this way; ``usage(of:)`` must
    /// always equal it (tests and operators compare the two).
    func recountUsage(of database: DatabaseKey) async throws -> DatabaseUsage
}
