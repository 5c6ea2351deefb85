import GRDB
import NimbusStore

extension SQLiteStore {
    /// Schema v13 ("v13-zone-query-indexes"): the query indexes' entries also in zone order.
    ///
    /// `record_values` and `record_tokens` are keyed value (or token) first, then record name
    /// and zone: the order a query over every zone of a database returns. A query in one zone
    /// read that key too, and passed over the entries of every other zone of the database
    /// between two of its own: with 100 zones, about 100 entries read a result, and a zone
    /// with few matches among zones with many read them all. These indexes put the zone
    /// before the value (the token), so a zone's query reads only its own entries, in the
    /// same result order.
    static func migrateV13ZoneQueryIndexes(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE INDEX record_values_by_zone ON record_values(db, type, field, zone, value, name);
                CREATE INDEX record_tokens_by_zone ON record_tokens(db, type, token, zone, name, field);
                """)
    }
}
