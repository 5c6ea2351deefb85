import Foundation
import GRDB
import NimbusProtocol
import NimbusStore

/// The index layouts of the record types one write touches, read once per type inside the
/// write transaction.
struct IndexLayoutCache {
    let database: DatabaseKey
    private var layouts: [String: IndexLayout.RecordType?] = [:]

    init(database: DatabaseKey) {
        self.database = database
    }

    mutating func layout(_ db: Database, type: String) throws -> IndexLayout.RecordType? {
        if let cached = layouts[type] { return cached }
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT kind, field FROM schema_indexes WHERE container = ? AND environment = ? AND type = ?"),
            arguments: [database.container, database.environment.rawValue, type])
        let layout =
            rows.isEmpty
            ? nil
            : IndexLayout.RecordType(
                valueFields: rows.filter { $0[0] == "value" }.map { $0[1] },
                tokenFields: rows.filter { $0[0] == "token" }.map { $0[1] })
        layouts[type] = .some(layout)
        return layout
    }
}

extension IndexValue {
    /// The stored key: INTEGER, REAL or TEXT, and `x'00'` for ``missing`` (a BLOB sorts after
    /// every number and text).
    var databaseValue: DatabaseValue {
        switch self {
        case .integer(let value): return value.databaseValue
        case .real(let value): return value.databaseValue
        case .text(let value): return value.databaseValue
        case .missing: return Data([0]).databaseValue
        }
    }

    init(_ databaseValue: DatabaseValue) {
        switch databaseValue.storage {
        case .int64(let value): self = .integer(value)
        case .double(let value): self = .real(value)
        case .string(let value): self = .text(value)
        case .blob, .null: self = .missing
        }
    }
}

extension SQLiteStore {
    /// Replaces the index entries of the written records (see ``IndexEntries/changes(_:zone:layout:)``).
    static func updateIndexEntries(
        _ db: Database, database: Int64, zone: String, changes: [(before: StoredRecord?, after: StoredRecord)],
        layouts: inout IndexLayoutCache
    ) throws {
        let entries = try IndexEntries.changes(changes, zone: zone) { try layouts.layout(db, type: $0) }
        for entry in entries.removedValues {
            try db.cachedStatement(
                sql: "DELETE FROM record_values WHERE db = ? AND type = ? AND field = ? AND value = ? AND name = ? AND zone = ?"
            ).execute(arguments: [database, entry.type, entry.index, entry.value.databaseValue, entry.recordName, entry.zone])
        }
        for entry in entries.removedTokens {
            try db.cachedStatement(
                sql: "DELETE FROM record_tokens WHERE db = ? AND type = ? AND token = ? AND name = ? AND zone = ? AND field = ?"
            ).execute(arguments: [database, entry.type, entry.token, entry.recordName, entry.zone, entry.field])
        }
        try insertIndexEntries(db, database: database, values: entries.addedValues, tokens: entries.addedTokens)
    }

    static func insertIndexEntries(
        _ db: Database, database: Int64, values: some Collection<ValueIndexEntry>, tokens: some Collection<TokenIndexEntry>
    ) throws {
        for entry in values {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO record_values (db, type, field, value, name, zone) VALUES (?, ?, ?, ?, ?, ?)"
            ).execute(arguments: [database, entry.type, entry.index, entry.value.databaseValue, entry.recordName, entry.zone])
        }
        for entry in tokens {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO record_tokens (db, type, token, name, zone, field) VALUES (?, ?, ?, ?, ?, ?)"
            ).execute(arguments: [database, entry.type, entry.token, entry.recordName, entry.zone, entry.field])
        }
    }

    /// Removes the entries of every record of a zone (the zone is being deleted).
    static func deleteIndexEntries(_ db: Database, database: Int64, zone: String) throws {
        try db.execute(sql: "DELETE FROM record_values WHERE db = ? AND zone = ?", arguments: [database, zone])
        try db.execute(sql: "DELETE FROM record_tokens WHERE db = ? AND zone = ?", arguments: [database, zone])
    }
}

// MARK: - Scans

extension SQLiteStore {
    public func scanIndex(_ scan: IndexScan, in database: DatabaseKey) async throws -> [IndexHit] {
        try await pool.read { db in
            guard let dbRow = try Self.databaseRow(db, database) else { return [] }
            switch scan.source {
            case .values(let index, let range):
                return try Self.scanValues(db, database: dbRow.id, scan: scan, index: index, range: range)
            case .tokens(let field, let tokens, let matchAll):
                return try Self.scanTokens(
                    db, database: dbRow.id, scan: scan, field: field, tokens: tokens, matchAll: matchAll)
            }
        }
    }

    static func scanValues(_ db: Database, database: Int64, scan: IndexScan, index: String, range: IndexRange) throws
        -> [IndexHit]
    {
        let (sql, arguments) = valuesScan(database: database, scan: scan, index: index, range: range)
        let rows = try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
        return rows.map { row in
            let record = storedRecord(row)
            return IndexHit(
                position: IndexPosition(key: IndexValue(row[12] as DatabaseValue), recordName: record.recordName, zone: row[13]),
                record: record)
        }
    }

    /// The statement of ``scanValues(_:database:scan:index:range:)``: `package` so a test can
    /// ask SQLite how it reads it.
    package static func valuesScan(database: Int64, scan: IndexScan, index: String, range: IndexRange)
        -> (sql: String, arguments: StatementArguments)
    {
        var conditions = ["v.db = ?", "v.type = ?", "v.field = ?"]
        var arguments: [DatabaseValue] = [database.databaseValue, scan.recordType.databaseValue, index.databaseValue]
        if let lower = range.lower {
            conditions.append(lower.inclusive ? "v.value >= ?" : "v.value > ?")
            arguments.append(lower.value.databaseValue)
        }
        if let upper = range.upper {
            conditions.append(upper.inclusive ? "v.value <= ?" : "v.value < ?")
            arguments.append(upper.value.databaseValue)
        } else if !range.includesMissing {
            conditions.append("v.value < ?")
            arguments.append(IndexValue.missing.databaseValue)
        }
        if let zone = scan.zone {
            conditions.append("v.zone = ?")
            arguments.append(zone.databaseValue)
        }
        let direction = scan.descending ? "DESC" : "ASC"
        if let after = scan.after {
            conditions.append("(v.value, v.name, v.zone) \(scan.descending ? "<" : ">") (?, ?, ?)")
            arguments += [(after.key ?? .missing).databaseValue, after.recordName.databaseValue, after.zone.databaseValue]
        }
        arguments.append(scan.limit.databaseValue)
        let sql = """
            SELECT \(prefixedRecordColumns), v.value, v.zone
            FROM record_values v JOIN records r ON r.db = v.db AND r.zone = v.zone AND r.name = v.name
            WHERE \(conditions.joined(separator: " AND ")) AND r.deleted = 0
            ORDER BY v.value \(direction), v.name \(direction), v.zone \(direction)
            LIMIT ?
            """
        return (sql, StatementArguments(arguments))
    }

    /// Token hits in (name, zone) order: one token's entries drive (the rarest, for
    /// `matchAll`), and each other token is a point lookup per candidate.
    static func scanTokens(
        _ db: Database, database: Int64, scan: IndexScan, field: String?, tokens: [String], matchAll: Bool
    ) throws -> [IndexHit] {
        guard !tokens.isEmpty else { return [] }
        var conditions = ["t.db = ?", "t.type = ?"]
        var arguments: [DatabaseValue] = [database.databaseValue, scan.recordType.databaseValue]
        let fieldCondition = field == nil ? "" : " AND u.field = ?"
        if matchAll {
            var ordered = tokens
            if tokens.count > 1 {
                // Drive with the rarest token (counted up to a bound).
                var counts: [String: Int] = [:]
                for token in tokens {
                    counts[token] = try Int.fetchOne(
                        db.cachedStatement(
                            sql: "SELECT count(*) FROM (SELECT 1 FROM record_tokens WHERE db = ? AND type = ? AND token = ? LIMIT 5000)"),
                        arguments: [database, scan.recordType, token]) ?? 0
                }
                ordered.sort { (counts[$0]!, $0) < (counts[$1]!, $1) }
            }
            conditions.append("t.token = ?")
            arguments.append(ordered[0].databaseValue)
            for token in ordered.dropFirst() {
                conditions.append(
                    "EXISTS (SELECT 1 FROM record_tokens u WHERE u.db = t.db AND u.type = t.type AND u.token = ? "
                        + "AND u.name = t.name AND u.zone = t.zone\(fieldCondition))")
                arguments.append(token.databaseValue)
                if let field { arguments.append(field.databaseValue) }
            }
        } else {
            conditions.append("t.token IN (\(databaseQuestionMarks(count: tokens.count)))")
            arguments += tokens.map(\.databaseValue)
        }
        if let field {
            conditions.append("t.field = ?")
            arguments.append(field.databaseValue)
        }
        if let zone = scan.zone {
            conditions.append("t.zone = ?")
            arguments.append(zone.databaseValue)
        }
        if let after = scan.after {
            conditions.append("(t.name, t.zone) > (?, ?)")
            arguments += [after.recordName.databaseValue, after.zone.databaseValue]
        }
        arguments.append(scan.limit.databaseValue)
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT \(prefixedRecordColumns), t.zone
                FROM record_tokens t JOIN records r ON r.db = t.db AND r.zone = t.zone AND r.name = t.name
                WHERE \(conditions.joined(separator: " AND ")) AND r.deleted = 0
                GROUP BY t.name, t.zone
                ORDER BY t.name, t.zone
                LIMIT ?
                """,
            arguments: StatementArguments(arguments))
        return rows.map { row in
            let record = storedRecord(row)
            return IndexHit(position: IndexPosition(key: nil, recordName: record.recordName, zone: row[12]), record: record)
        }
    }
}
