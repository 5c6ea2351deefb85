import NimbusProtocol
import NimbusStore
import PostgresNIO

/// A value-index key as PostgreSQL stores it: `(kind, num, txt)`.
struct StoredIndexKey: Sendable {
    /// 0 a number, 1 a text, 2 the missing key.
    var kind: Int16
    /// The number as exact decimal text (cast to `numeric`): an integer's digits, or a
    /// double's shortest round-trip form, which orders as the doubles do. "0" otherwise.
    var num: String
    var txt: String

    init(_ value: IndexValue) {
        switch value {
        case .integer(let number): self.init(kind: 0, num: String(number), txt: "")
        case .real(let number):
            let text: String
            if number.isNaN {
                text = "NaN"
            } else if number.isInfinite {
                text = number > 0 ? "Infinity" : "-Infinity"
            } else {
                text = "\(number)"
            }
            self.init(kind: 0, num: text, txt: "")
        case .text(let text): self.init(kind: 1, num: "0", txt: text)
        case .missing: self.init(kind: 2, num: "0", txt: "")
        }
    }

    init(kind: Int16, num: String, txt: String) {
        self.kind = kind
        self.num = num
        self.txt = txt
    }

    var value: IndexValue {
        switch kind {
        case 0: return Int64(num).map(IndexValue.integer) ?? .real(Double(num) ?? .nan)
        case 1: return .text(txt)
        default: return .missing
        }
    }
}

extension PostgresStore {
    /// The first key of the schema advisory locks ("nisc"); the second is the hash of the
    /// container environment. Record writes hold it shared while they read the index layout
    /// and write entries; a schema change holds it exclusively, so its backfill never misses a
    /// record written under the old layout.
    static let schemaLockKey: Int32 = 0x6E69_7363

    static func schemaLockName(container: String, environment: ContainerEnvironment) -> String {
        "\(container)/\(environment.rawValue)"
    }

    /// Brings the index entries of the written records in line with the container
    /// environment's index layout (see ``IndexEntries/changes(_:zone:layout:)``).
    func updateIndexEntries(
        _ transaction: Transaction, key: DatabaseKey, database: Int64, zone: String,
        changes: [(before: StoredRecord?, after: StoredRecord)]
    ) async throws {
        let lockName = Self.schemaLockName(container: key.container, environment: key.environment)
        try await transaction.rows("SELECT pg_advisory_xact_lock_shared(\(Self.schemaLockKey), hashtext(\(lockName)))")
        var types = Set<String>()
        for change in changes {
            types.insert(change.after.recordType)
            if let before = change.before { types.insert(before.recordType) }
        }
        let layouts = try await indexLayouts(transaction, container: key.container, environment: key.environment, types: types)
        guard !layouts.recordTypes.isEmpty else { return }
        let entries = try IndexEntries.changes(changes, zone: zone) { layouts.recordTypes[$0] }
        try await delete(transaction, database: database, values: entries.removedValues, tokens: entries.removedTokens)
        try await insert(transaction, database: database, values: entries.addedValues, tokens: entries.addedTokens)
    }

    /// The index layout of some record types (all when `types` is `nil`) as `schema_indexes` holds it.
    func indexLayouts(
        _ transaction: Transaction, container: String, environment: ContainerEnvironment, types: Set<String>?
    ) async throws -> IndexLayout {
        let rows = try await transaction.rows(
            """
            SELECT type, kind, field FROM schema_indexes
            WHERE container = \(container) AND environment = \(environment.rawValue)
              AND (\(types == nil) OR type = ANY(\(Array(types ?? []))))
            ORDER BY type, kind, field
            """)
        var layout = IndexLayout()
        for row in rows {
            let (type, kind, field) = try row.decode((String, String, String).self)
            var entry = layout.recordTypes[type] ?? IndexLayout.RecordType(valueFields: [], tokenFields: [])
            if kind == "value" { entry.valueFields.append(field) } else { entry.tokenFields.append(field) }
            layout.recordTypes[type] = entry
        }
        return layout
    }

    func delete(
        _ transaction: Transaction, database: Int64, values: [ValueIndexEntry], tokens: [TokenIndexEntry]
    ) async throws {
        if !values.isEmpty {
            let keys = values.map { StoredIndexKey($0.value) }
            try await transaction.rows(
                """
                DELETE FROM record_values v
                USING unnest(\(values.map(\.type))::text[], \(values.map(\.index))::text[], \(keys.map(\.kind))::int2[],
                    \(keys.map(\.num))::text[], \(keys.map(\.txt))::text[], \(values.map(\.recordName))::text[],
                    \(values.map(\.zone))::text[]) AS t(type, field, kind, num, txt, name, zone)
                WHERE v.db = \(database) AND v.type = t.type AND v.field = t.field AND v.kind = t.kind
                  AND v.num = t.num::numeric AND v.txt = t.txt AND v.name = t.name AND v.zone = t.zone
                """)
        }
        if !tokens.isEmpty {
            try await transaction.rows(
                """
                DELETE FROM record_tokens v
                USING unnest(\(tokens.map(\.type))::text[], \(tokens.map(\.token))::text[], \(tokens.map(\.recordName))::text[],
                    \(tokens.map(\.zone))::text[], \(tokens.map(\.field))::text[]) AS t(type, token, name, zone, field)
                WHERE v.db = \(database) AND v.type = t.type AND v.token = t.token AND v.name = t.name
                  AND v.zone = t.zone AND v.field = t.field
                """)
        }
    }

    func insert(
        _ transaction: Transaction, database: Int64, values: [ValueIndexEntry], tokens: [TokenIndexEntry]
    ) async throws {
        for start in stride(from: 0, to: values.count, by: 5_000) {
            let chunk = Array(values[start..<min(start + 5_000, values.count)])
            let keys = chunk.map { StoredIndexKey($0.value) }
            try await transaction.rows(
                """
                INSERT INTO record_values (db, type, field, kind, num, txt, name, zone)
                SELECT \(database), t.type, t.field, t.kind, t.num::numeric, t.txt, t.name, t.zone
                FROM unnest(\(chunk.map(\.type))::text[], \(chunk.map(\.index))::text[], \(keys.map(\.kind))::int2[],
                    \(keys.map(\.num))::text[], \(keys.map(\.txt))::text[], \(chunk.map(\.recordName))::text[],
                    \(chunk.map(\.zone))::text[]) AS t(type, field, kind, num, txt, name, zone)
                ON CONFLICT DO NOTHING
                """)
        }
        for start in stride(from: 0, to: tokens.count, by: 5_000) {
            let chunk = Array(tokens[start..<min(start + 5_000, tokens.count)])
            try await transaction.rows(
                """
                INSERT INTO record_tokens (db, type, token, name, zone, field)
                SELECT \(database), t.type, t.token, t.name, t.zone, t.field
                FROM unnest(\(chunk.map(\.type))::text[], \(chunk.map(\.token))::text[], \(chunk.map(\.recordName))::text[],
                    \(chunk.map(\.zone))::text[], \(chunk.map(\.field))::text[]) AS t(type, token, name, zone, field)
                ON CONFLICT DO NOTHING
                """)
        }
    }
}

// MARK: - Scans

extension PostgresStore {
    public func scanIndex(_ scan: IndexScan, in database: DatabaseKey) async throws -> [IndexHit] {
        // The database's id is looked up first and bound as a value. Named by a subquery in
        // the scan, it left the planner an average database's share of the entries to plan
        // for; for a database far larger than the average (one user's among 10,000 small
        // ones) it then read all of the database's entries and sorted them, instead of
        // reading the index in order until the page was full (`nimbus-bench growth`, 10,000
        // users at 1M: 46 ms for an EQUALS page, 8 ms with the id bound). Joining `databases`
        // instead loses the index's order altogether (5.8 s at 850k entries).
        guard let id = try await databaseID(database) else { return [] }
        switch scan.source {
        case .values(let index, let range):
            return try await scanValues(scan, index: index, range: range, databaseID: id)
        case .tokens(let field, let tokens, let matchAll):
            guard !tokens.isEmpty else { return [] }
            return try await scanTokens(scan, field: field, tokens: tokens, matchAll: matchAll, databaseID: id)
        }
    }

    /// The id of `database`'s row, or `nil` when it was never written.
    private func databaseID(_ database: DatabaseKey) async throws -> Int64? {
        try await rows("SELECT d.id FROM databases d WHERE \(database: database)").first?.decode(Int64.self)
    }

    /// SQL text with `$n` placeholders and its bindings, built piece by piece.
    struct DynamicQuery {
        var sql = ""
        var bindings = PostgresBindings()

        /// Appends a placeholder for `value` and binds it.
        mutating func bind(_ value: some PostgresDynamicTypeEncodable) -> String {
            bindings.append(value)
            return "$\(bindings.count)"
        }

        /// `(kind, num, txt)` placeholders for a key.
        mutating func bind(key value: IndexValue) -> String {
            let key = StoredIndexKey(value)
            return "(\(bind(key.kind)), \(bind(key.num))::numeric, \(bind(key.txt)))"
        }

        var query: PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: bindings) }
    }

    func scanValues(_ scan: IndexScan, index: String, range: IndexRange, databaseID: Int64) async throws
        -> [IndexHit]
    {
        var query = DynamicQuery()
        var conditions = [
            "v.db = \(query.bind(databaseID))",
            "v.type = \(query.bind(scan.recordType))", "v.field = \(query.bind(index))",
        ]
        if let lower = range.lower {
            conditions.append("(v.kind, v.num, v.txt) \(lower.inclusive ? ">=" : ">") \(query.bind(key: lower.value))")
        }
        if let upper = range.upper {
            conditions.append("(v.kind, v.num, v.txt) \(upper.inclusive ? "<=" : "<") \(query.bind(key: upper.value))")
        } else if !range.includesMissing {
            conditions.append("v.kind < 2")
        }
        if let zone = scan.zone { conditions.append("v.zone = \(query.bind(zone))") }
        if let after = scan.after {
            let key = StoredIndexKey(after.key ?? .missing)
            conditions.append(
                "(v.kind, v.num, v.txt, v.name, v.zone) \(scan.descending ? "<" : ">") (\(query.bind(key.kind)), "
                    + "\(query.bind(key.num))::numeric, \(query.bind(key.txt)), \(query.bind(after.recordName)), "
                    + "\(query.bind(after.zone)))")
        }
        let direction = scan.descending ? "DESC" : "ASC"
        query.sql = """
            SELECT \(Self.recordColumnsR), v.kind, v.num::text, v.txt, v.zone
            FROM record_values v
            JOIN records r ON r.db = v.db AND r.zone = v.zone AND r.name = v.name
            WHERE \(conditions.joined(separator: " AND ")) AND NOT r.deleted
            ORDER BY v.kind \(direction), v.num \(direction), v.txt \(direction), v.name \(direction), v.zone \(direction)
            LIMIT \(query.bind(Int64(max(1, scan.limit))))
            """
        return try await rows(query.query).map { row in
            var columns = ColumnReader(row)
            let record = try columns.record()
            let key = StoredIndexKey(kind: try columns.next(), num: try columns.next(), txt: try columns.next())
            return IndexHit(
                position: IndexPosition(key: key.value, recordName: record.recordName, zone: try columns.next()),
                record: record)
        }
    }

    /// Token hits in (name, zone) order: one token's entries drive (the rarest, for
    /// `matchAll`), and each other token is an index probe per candidate.
    func scanTokens(_ scan: IndexScan, field: String?, tokens: [String], matchAll: Bool, databaseID: Int64)
        async throws -> [IndexHit]
    {
        var query = DynamicQuery()
        var conditions = ["t.db = \(query.bind(databaseID))", "t.type = \(query.bind(scan.recordType))"]
        if matchAll {
            var ordered = tokens
            if tokens.count > 1 {
                var counts: [String: Int64] = [:]
                for row in try await rows(
                    """
                    SELECT tok, (SELECT count(*) FROM (
                        SELECT 1 FROM record_tokens c
                        WHERE c.db = \(databaseID) AND c.type = \(scan.recordType) AND c.token = tok LIMIT 5000) s)
                    FROM unnest(\(tokens)::text[]) AS tok
                    """)
                {
                    let (token, count) = try row.decode((String, Int64).self)
                    counts[token] = count
                }
                ordered.sort { (counts[$0] ?? 0, $0) < (counts[$1] ?? 0, $1) }
            }
            conditions.append("t.token = \(query.bind(ordered[0]))")
            for token in ordered.dropFirst() {
                let fieldCondition = field.map { " AND u.field = \(query.bind($0))" } ?? ""
                conditions.append(
                    "EXISTS (SELECT 1 FROM record_tokens u WHERE u.db = t.db AND u.type = t.type AND u.token = "
                        + "\(query.bind(token)) AND u.name = t.name AND u.zone = t.zone\(fieldCondition))")
            }
        } else {
            conditions.append("t.token = ANY(\(query.bind(tokens))::text[])")
        }
        if let field { conditions.append("t.field = \(query.bind(field))") }
        if let zone = scan.zone { conditions.append("t.zone = \(query.bind(zone))") }
        if let after = scan.after {
            conditions.append("(t.name, t.zone) > (\(query.bind(after.recordName)), \(query.bind(after.zone)))")
        }
        query.sql = """
            SELECT DISTINCT ON (t.name, t.zone) \(Self.recordColumnsR), t.zone
            FROM record_tokens t
            JOIN records r ON r.db = t.db AND r.zone = t.zone AND r.name = t.name
            WHERE \(conditions.joined(separator: " AND ")) AND NOT r.deleted
            ORDER BY t.name, t.zone
            LIMIT \(query.bind(Int64(max(1, scan.limit))))
            """
        return try await rows(query.query).map { row in
            var columns = ColumnReader(row)
            let record = try columns.record()
            return IndexHit(position: IndexPosition(key: nil, recordName: record.recordName, zone: try columns.next()), record: record)
        }
    }
}
