import GRDB
import NimbusStore

extension SQLiteStore {
    /// Schema v8 ("v8-usage"): each database's usage counter (``DatabaseUsage``), the columns
    /// `record_bytes` and `asset_bytes` of `databases`, filled by counting what every
    /// existing database holds (``recountSQL(database:)``); from then on every write keeps
    /// them (``addUsage(_:databaseID:_:quota:)``).
    static func migrateV8Usage(_ db: Database) throws {
        let recount = recountSQL(database: "databases.id")
        try db.execute(
            sql: """
                ALTER TABLE databases ADD COLUMN record_bytes INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE databases ADD COLUMN asset_bytes INTEGER NOT NULL DEFAULT 0;
                UPDATE databases SET record_bytes = (\(recount.recordBytes)), asset_bytes = (\(recount.assetBytes));
                """)
    }
}
