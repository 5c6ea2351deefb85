import Foundation
import GRDB

extension SQLiteStore {
    /// The schema migrations an existing store file has not had yet, in the order opening it
    /// runs them; none for a file that does not exist (a new store is created in moments).
    ///
    /// A server tells its operator before an upgrade that takes a while: one migration,
    /// `v14-records-in-write-order`, copies every record (docs/DEPLOYMENT.md, "SQLite
    /// upgrades").
    ///
    /// ```swift
    /// let pending = try SQLiteStore.pendingMigrations(directory: "nimbus-data")
    /// if !pending.isEmpty { logger.notice("upgrading: \(pending)") }
    /// ```
    public static func pendingMigrations(directory: String) throws -> [String] {
        let path = (directory as NSString).appendingPathComponent("nimbus.sqlite")
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let migrator = Self.migrator
        let applied = try queue.read { db in try migrator.appliedIdentifiers(db) }
        return migrator.migrations.filter { !applied.contains($0) }
    }
}
