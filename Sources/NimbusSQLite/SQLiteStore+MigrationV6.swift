import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore {
    /// Schema v6 ("v6-repair-values"): repairs values older releases let in that cannot be
    /// read back — a DOUBLE of NaN, ±Infinity or an overflowing literal (`1e309`) was
    /// stored as `null`, and from then on every decoded read of its record failed.
    ///
    /// - Records: a field whose stored value does not decode is removed (the canonical
    ///   writer never writes `null`, so only fields texts containing it are examined); the
    ///   record's index entries are rebuilt from what remains. The record keeps its version:
    ///   no client could ever read the lost value, and one that failed on the record reads
    ///   it again from its old sync token.
    /// - Subscriptions: one whose definition does not decode (a filter value stored as
    ///   `null`) cannot be repaired faithfully, so it is deleted; its owner sees it gone
    ///   from `subscriptions/list` and can save it again.
    static func migrateV6RepairValues(_ db: Database) throws {
        var layoutsByDatabase: [Int64: IndexLayoutCache] = [:]
        let candidates = try Row.fetchAll(
            db,
            sql: """
                SELECT \(prefixedRecordColumns), r.db, r.zone, d.container, d.environment, d.scope, d.owner
                FROM records r JOIN databases d ON d.id = r.db
                WHERE r.deleted = 0 AND instr(r.fields, 'null') > 0
                """)
        for row in candidates {
            let record = storedRecord(row)
            let databaseID: Int64 = row[12]
            let zone: String = row[13]
            guard let repaired = record.repairedFieldsJSON() else { continue }
            try db.execute(
                sql: "UPDATE records SET fields = ? WHERE db = ? AND zone = ? AND name = ?",
                arguments: [repaired, databaseID, zone, record.recordName])
            try db.execute(
                sql: "DELETE FROM record_values WHERE db = ? AND type = ? AND name = ? AND zone = ?",
                arguments: [databaseID, record.recordType, record.recordName, zone])
            try db.execute(
                sql: "DELETE FROM record_tokens WHERE db = ? AND type = ? AND name = ? AND zone = ?",
                arguments: [databaseID, record.recordType, record.recordName, zone])
            guard let environment = ContainerEnvironment(rawValue: row[15]),
                let scope = DatabaseScope(rawValue: row[16])
            else { continue }
            var layouts =
                layoutsByDatabase[databaseID]
                ?? IndexLayoutCache(
                    database: DatabaseKey(container: row[14], environment: environment, scope: scope, owner: row[17]))
            var fixed = record
            fixed.fieldsJSON = repaired
            let entries = try IndexEntries.changes([(nil, fixed)], zone: zone) { try layouts.layout(db, type: $0) }
            try insertIndexEntries(db, database: databaseID, values: entries.addedValues, tokens: entries.addedTokens)
            layoutsByDatabase[databaseID] = layouts
        }
        for row in try Row.fetchAll(db, sql: "SELECT db, owner, id, definition FROM subscriptions") {
            let definition: String = row[3]
            guard SubscriptionDefinition(storedDefinition: definition) == nil else { continue }
            try db.execute(
                sql: "DELETE FROM subscriptions WHERE db = ? AND owner = ? AND id = ?",
                arguments: [row[0] as Int64, row[1] as String, row[2] as String])
        }
    }
}
