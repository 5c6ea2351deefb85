import Foundation
import GRDB
import NimbusProtocol

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
        while let row = try cursor.next() {
            records.append(storedRecord(row, sqlite))
        }
        return records
    }

    /// The current row of a ``fetchStoredRecords(_:arguments:)`` cursor.
    private static func storedRecord(_ row: Row, _ statement: SQLiteStatement) -> StoredRecord {
        func text(_ index: CInt) -> String { String(sqliteStatement: statement, index: index) }
        func optionalText(_ index: CInt) -> String? { row.hasNull(atIndex: Int(index)) ? nil : text(index) }
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
        // Chunk to stay far below SQLite's host-parameter limit.
        for start in stride(from: 0, to: names.count, by: 500) {
            let chunk = Array(names[start..<min(start + 500, names.count)])
            let placeholders = databaseQuestionMarks(count: chunk.count)
            let records = try fetchStoredRecords(
                db.cachedStatement(
                    sql: "SELECT \(recordColumns) FROM records WHERE db = ? AND zone = ? AND name IN (\(placeholders))"),
                arguments: StatementArguments([database, zone] as [any DatabaseValueConvertible] + chunk))
            for record in records {
                result[record.recordName] = record
            }
        }
        return result
    }

    static func write(_ db: Database, database: Int64, zone: String, record: StoredRecord) throws {
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO records (db, zone, \(recordColumns))
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            database, zone, record.recordName, record.recordType, record.fieldsJSON,
            record.created.timestamp, record.created.userRecordName, record.created.deviceID,
            record.modified.timestamp, record.modified.userRecordName, record.modified.deviceID,
            record.version, record.createdVersion, record.deleted,
        ])
    }
}
