import Foundation
import GRDB
import GRDBSQLite
import NimbusProtocol
import NimbusSQLiteBinding
import NimbusStore

extension SQLiteStore {
    static let recordColumns =
        "name, type, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, version, created_version, deleted"

    /// ``recordColumns`` of the table aliased `r`.
    static let prefixedRecordColumns = recordColumns.split(separator: ",")
        .map { "r." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")

    static func storedRecord(_ row: Row) -> StoredRecord {
        StoredRecord(
            recordName: row[0], recordType: row[1], fieldsJSON: row[2],
            created: RecordStamp(timestamp: row[3], userRecordName: row[4], deviceID: row[5]),
            modified: RecordStamp(timestamp: row[6], userRecordName: row[7], deviceID: row[8]),
            version: row[9], createdVersion: row[10], deleted: row[11])
    }

    /// Runs a query selecting ``recordColumns`` and decodes the rows straight from the SQLite
    /// statement (a cursor, not copied rows; no generic value decoding): the change feed
    /// reads 200 records per request this way. The values are the same as ``storedRecord(_:)``
    /// decodes.
    static func fetchStoredRecords(_ statement: Statement, arguments: StatementArguments) throws -> [StoredRecord] {
        var records: [StoredRecord] = []
        let cursor = try Row.fetchCursor(statement, arguments: arguments)
        let sqlite = statement.sqliteStatement
        while try cursor.next() != nil {
            records.append(storedRecord(sqlite))
        }
        return records
    }

    /// The row a statement selecting ``recordColumns`` is on, read through SQLite's C API.
    static func storedRecord(_ statement: SQLiteStatement) -> StoredRecord {
        func text(_ index: CInt) -> String { String(sqliteStatement: statement, index: index) }
        func optionalText(_ index: CInt) -> String? {
            sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : text(index)
        }
        func int(_ index: CInt) -> Int64 { Int64(sqliteStatement: statement, index: index) }
        return StoredRecord(
            recordName: text(0), recordType: text(1), fieldsJSON: text(2),
            created: RecordStamp(timestamp: int(3), userRecordName: optionalText(4), deviceID: optionalText(5)),
            modified: RecordStamp(timestamp: int(6), userRecordName: optionalText(7), deviceID: optionalText(8)),
            version: int(9), createdVersion: int(10), deleted: Bool(sqliteStatement: statement, index: 11))
    }

    static func zoneState(_ row: Row) -> ZoneState {
        ZoneState(
            zoneName: row["name"], incarnation: row["incarnation"], changeVersion: row["change_version"],
            metaVersion: row["meta_version"], horizon: row["horizon"], deleted: row["deleted"])
    }

    static func zone(_ db: Database, database: Int64, name: String) throws -> ZoneState? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM zones WHERE db = ? AND name = ?"),
            arguments: [database, name]
        ).map(zoneState)
    }

    /// Rows (live or tombstone) for the given names.
    static func records(_ db: Database, database: Int64, zone: String, names: [String]) throws -> [String: StoredRecord] {
        var result: [String: StoredRecord] = [:]
        result.reserveCapacity(names.count)
        // Chunk to stay far below SQLite's host-parameter limit.
        for start in stride(from: 0, to: names.count, by: 500) {
            let chunk = names[start..<min(start + 500, names.count)]
            var select = BoundStatement(
                try db.cachedStatement(
                    sql: "SELECT \(recordColumns) FROM records WHERE db = ? AND zone = ? AND name IN (\(placeholders(chunk.count)))"))
            select.bind(database)
            select.bind(zone)
            for name in chunk { select.bind(name) }
            try select.rows { statement in
                let record = storedRecord(statement)
                result[record.recordName] = record
            }
        }
        return result
    }

    /// `count` comma-separated `?`s.
    static func placeholders(_ count: Int) -> String {
        count == 0 ? "" : String(repeating: "?,", count: count - 1) + "?"
    }

    static let writeRecordSQL = """
        INSERT OR REPLACE INTO records (db, zone, \(recordColumns))
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// Writes rows (live records and tombstones), replacing those of the same names.
    static func write(_ db: Database, database: Int64, zone: String, records: some Sequence<StoredRecord>) throws {
        let statement = try db.cachedStatement(sql: writeRecordSQL)
        for record in records {
            var insert = BoundStatement(statement)
            insert.bind(database)
            insert.bind(zone)
            insert.bind(record.recordName)
            insert.bind(record.recordType)
            insert.bind(record.fieldsJSON)
            insert.bind(record.created.timestamp)
            insert.bind(record.created.userRecordName)
            insert.bind(record.created.deviceID)
            insert.bind(record.modified.timestamp)
            insert.bind(record.modified.userRecordName)
            insert.bind(record.modified.deviceID)
            insert.bind(record.version)
            insert.bind(record.createdVersion)
            insert.bind(record.deleted)
            try insert.executeUnobserved()
        }
    }
}
