import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// Schema version 8: repairs values older releases let in that cannot be read back — a
    /// DOUBLE of NaN, ±Infinity or an overflowing literal (`1e309`) was stored as `null`, and
    /// from then on every decoded read of its record failed. The same repair as SQLite's
    /// "v6-repair-values" migration (`SQLiteStore.migrateV6RepairValues`):
    ///
    /// - a record field whose stored value does not decode is removed (only fields texts
    ///   containing `null` are examined: the canonical writer never writes it) and the
    ///   record's index entries are rebuilt; the record keeps its version and its written
    ///   form's head and tail (they do not include the fields);
    /// - a subscription whose definition does not decode is deleted (it cannot be repaired
    ///   faithfully; its owner can save it again).
    func repairUnreadableValues(_ transaction: Transaction) async throws {
        let rows = try await transaction.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT \(Self.recordColumnsR), r.db, r.zone, d.container, d.environment
                    FROM records r JOIN databases d ON d.id = r.db
                    WHERE NOT r.deleted AND strpos(r.fields, 'null') > 0
                    """))
        var layouts: [String: IndexLayout] = [:]
        for row in rows {
            var columns = ColumnReader(row)
            var record = try columns.record()
            let databaseID: Int64 = try columns.next()
            let zone: String = try columns.next()
            let container: String = try columns.next()
            let environmentName: String = try columns.next()
            guard let repaired = record.repairedFieldsJSON() else { continue }
            try await transaction.rows(
                """
                UPDATE records SET fields = \(repaired)
                WHERE db = \(databaseID) AND zone = \(zone) AND name = \(record.recordName)
                """)
            try await transaction.rows(
                """
                DELETE FROM record_values
                WHERE db = \(databaseID) AND type = \(record.recordType) AND name = \(record.recordName) AND zone = \(zone)
                """)
            try await transaction.rows(
                """
                DELETE FROM record_tokens
                WHERE db = \(databaseID) AND type = \(record.recordType) AND name = \(record.recordName) AND zone = \(zone)
                """)
            guard let environment = ContainerEnvironment(rawValue: environmentName) else { continue }
            let layoutKey = "\(container)/\(environmentName)"
            let layout: IndexLayout
            if let cached = layouts[layoutKey] {
                layout = cached
            } else {
                layout = try await indexLayouts(transaction, container: container, environment: environment, types: nil)
                layouts[layoutKey] = layout
            }
            record.fieldsJSON = repaired
            let entries = try IndexEntries.changes([(nil, record)], zone: zone) { layout.recordTypes[$0] }
            try await insert(transaction, database: databaseID, values: entries.addedValues, tokens: entries.addedTokens)
        }
        for row in try await transaction.rows("SELECT db, owner, id, definition FROM subscriptions") {
            let (databaseID, owner, id, definition) = try row.decode((Int64, String, String, String).self)
            guard SubscriptionDefinition(storedDefinition: definition) == nil else { continue }
            try await transaction.rows(
                "DELETE FROM subscriptions WHERE db = \(databaseID) AND owner = \(owner) AND id = \(id)")
        }
    }
}
