import Foundation
import GRDB

extension SQLiteStore {
    /// The bytes the database takes on disk once its write-ahead log is written back into
    /// the file and emptied (`wal_checkpoint(TRUNCATE)`): the file's size, then. `nimbus-bench
    /// growth` divides it by the records stored.
    package func diskBytes() async throws -> Int64 {
        try await pool.writeWithoutTransaction { db in
            _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            let pages = try Int64.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let size = try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 0
            return pages * size
        }
    }
}
