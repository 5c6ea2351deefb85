import GRDB
import NimbusProtocol
import NimbusStore

extension SQLiteStore: SchemaStore {
    public func schema(container: String, environment: ContainerEnvironment) async throws -> VersionedSchema {
        // A Sendable result, so that GRDB's async read (off the cooperative pool) is the one chosen.
        let stored: (version: Int64, document: String)? = try await pool.read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT version, document FROM schemas WHERE container = ? AND environment = ?"),
                arguments: [container, environment.rawValue]
            ).map { row in (row[0], row[1]) }
        }
        guard let stored else { return VersionedSchema(schema: ContainerSchema(), version: 0) }
        return VersionedSchema(
            schema: try StorageAnswers.storedSchema(stored.document, container: container, environment: environment),
            version: stored.version)
    }

    public func schemaVersion(container: String, environment: ContainerEnvironment) async throws -> Int64 {
        try await pool.read { db in
            try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT version FROM schemas WHERE container = ? AND environment = ?"),
                arguments: [container, environment.rawValue]) ?? 0
        }
    }

    public func updateSchema(
        _ schema: ContainerSchema, container: String, environment: ContainerEnvironment, expectedVersion: Int64
    ) async throws -> Int64 {
        try await pool.write { db in
            let current =
                try Int64.fetchOne(
                    db, sql: "SELECT version FROM schemas WHERE container = ? AND environment = ?",
                    arguments: [container, environment.rawValue]) ?? 0
            guard current == expectedVersion else {
                throw SchemaRules.versionConflict(
                    container: container, environment: environment, current: current, expected: expectedVersion)
            }
            let version = current + 1
            try db.execute(
                sql: """
                    INSERT INTO schemas (container, environment, version, document) VALUES (?, ?, ?, ?)
                    ON CONFLICT (container, environment) DO UPDATE SET version = excluded.version, document = excluded.document
                    """,
                arguments: [container, environment.rawValue, version, SchemaFile.text(of: schema)])
            try Self.applyLayout(schema.indexLayout, db, container: container, environment: environment)
            return version
        }
    }

    struct LayoutRow: Hashable {
        var type: String
        var kind: String
        var field: String
    }

    /// Makes `schema_indexes` and the entries match `layout`: drops the entries of removed
    /// indexes and computes those of added ones for every record of the type in every
    /// database of the container environment.
    static func applyLayout(
        _ layout: IndexLayout, _ db: Database, container: String, environment: ContainerEnvironment
    ) throws {
        let old = Set(
            try Row.fetchAll(
                db, sql: "SELECT type, kind, field FROM schema_indexes WHERE container = ? AND environment = ?",
                arguments: [container, environment.rawValue]
            ).map { LayoutRow(type: $0[0], kind: $0[1], field: $0[2]) })
        var new = Set<LayoutRow>()
        for (type, fields) in layout.recordTypes {
            for field in fields.valueFields { new.insert(LayoutRow(type: type, kind: "value", field: field)) }
            for field in fields.tokenFields { new.insert(LayoutRow(type: type, kind: "token", field: field)) }
        }
        let databases = try Int64.fetchAll(
            db, sql: "SELECT id FROM databases WHERE container = ? AND environment = ?",
            arguments: [container, environment.rawValue])
        for row in old.subtracting(new) {
            try db.execute(
                sql: "DELETE FROM schema_indexes WHERE container = ? AND environment = ? AND type = ? AND kind = ? AND field = ?",
                arguments: [container, environment.rawValue, row.type, row.kind, row.field])
            let table = row.kind == "value" ? "record_values" : "record_tokens"
            for database in databases {
                try db.execute(
                    sql: "DELETE FROM \(table) WHERE db = ? AND type = ? AND field = ?",
                    arguments: [database, row.type, row.field])
            }
        }
        let added = new.subtracting(old)
        for row in added {
            try db.execute(
                sql: "INSERT INTO schema_indexes (container, environment, type, kind, field) VALUES (?, ?, ?, ?, ?)",
                arguments: [container, environment.rawValue, row.type, row.kind, row.field])
        }
        let addedByType = Dictionary(grouping: added, by: \.type)
        for (type, rows) in addedByType {
            let addedLayout = IndexLayout.RecordType(
                valueFields: rows.filter { $0.kind == "value" }.map(\.field).sorted(),
                tokenFields: rows.filter { $0.kind == "token" }.map(\.field).sorted())
            for database in databases {
                try backfill(db, database: database, type: type, layout: addedLayout)
            }
        }
    }

    /// Writes the entries of `layout` for every live record of `type` in one database.
    static func backfill(_ db: Database, database: Int64, type: String, layout: IndexLayout.RecordType) throws {
        let cursor = try Row.fetchCursor(
            db, sql: "SELECT \(recordColumns), zone FROM records WHERE db = ? AND type = ? AND deleted = 0",
            arguments: [database, type])
        var pending: [(zone: String, record: StoredRecord)] = []
        while let row = try cursor.next() {
            pending.append((row[12], storedRecord(row)))
        }
        for (zone, record) in pending {
            let entries = try IndexEntries.rows(of: record, zone: zone, layout: layout)
            try insertIndexEntries(db, database: database, values: entries.values, tokens: entries.tokens)
        }
    }
}
