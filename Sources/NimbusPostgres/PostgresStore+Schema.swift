import NimbusProtocol
import NimbusStore
import PostgresNIO

extension PostgresStore: SchemaStore {
    public func schema(container: String, environment: ContainerEnvironment) async throws -> VersionedSchema {
        let rows = try await rows(
            "SELECT version, document FROM schemas WHERE container = \(container) AND environment = \(environment.rawValue)")
        guard let row = rows.first else { return VersionedSchema(schema: ContainerSchema(), version: 0) }
        let (version, document) = try row.decode((Int64, String).self)
        return VersionedSchema(
            schema: try StorageAnswers.storedSchema(document, container: container, environment: environment),
            version: version)
    }

    public func schemaVersion(container: String, environment: ContainerEnvironment) async throws -> Int64 {
        try await rows(
            "SELECT version FROM schemas WHERE container = \(container) AND environment = \(environment.rawValue)"
        ).first.map { try $0.decode(Int64.self) } ?? 0
    }

    /// Under the container environment's exclusive schema lock (so no record write is between
    /// reading the old layout and committing its entries): checks the version, writes the
    /// document and the layout, and brings the index entries in line.
    public func updateSchema(
        _ schema: ContainerSchema, container: String, environment: ContainerEnvironment, expectedVersion: Int64
    ) async throws -> Int64 {
        try await transaction { transaction in
            let lockName = Self.schemaLockName(container: container, environment: environment)
            try await transaction.rows("SELECT pg_advisory_xact_lock(\(Self.schemaLockKey), hashtext(\(lockName)))")
            let current =
                try await transaction.rows(
                    "SELECT version FROM schemas WHERE container = \(container) AND environment = \(environment.rawValue)"
                ).first.map { try $0.decode(Int64.self) } ?? 0
            guard current == expectedVersion else {
                throw SchemaRules.versionConflict(
                    container: container, environment: environment, current: current, expected: expectedVersion)
            }
            let version = current + 1
            try await transaction.rows(
                """
                INSERT INTO schemas (container, environment, version, document)
                VALUES (\(container), \(environment.rawValue), \(version), \(SchemaFile.text(of: schema)))
                ON CONFLICT (container, environment) DO UPDATE SET version = EXCLUDED.version, document = EXCLUDED.document
                """)
            let old = try await indexLayouts(transaction, container: container, environment: environment, types: nil)
            try await applyLayout(
                transaction, from: old, to: schema.indexLayout, container: container, environment: environment)
            return version
        }
    }

    /// Writes the layout rows that changed, drops the entries of removed indexes and computes
    /// those of added ones for every live record of the type in the container environment.
    func applyLayout(
        _ transaction: Transaction, from old: IndexLayout, to new: IndexLayout, container: String,
        environment: ContainerEnvironment
    ) async throws {
        func rows(_ layout: IndexLayout) -> Set<[String]> {
            var rows = Set<[String]>()
            for (type, fields) in layout.recordTypes {
                for field in fields.valueFields { rows.insert([type, "value", field]) }
                for field in fields.tokenFields { rows.insert([type, "token", field]) }
            }
            return rows
        }
        let before = rows(old)
        let after = rows(new)
        for row in before.subtracting(after) {
            let (type, kind, field) = (row[0], row[1], row[2])
            try await transaction.rows(
                """
                DELETE FROM schema_indexes WHERE container = \(container) AND environment = \(environment.rawValue)
                  AND type = \(type) AND kind = \(kind) AND field = \(field)
                """)
            let table = kind == "value" ? "record_values" : "record_tokens"
            try await transaction.rows(
                """
                DELETE FROM \(unescaped: table) v USING databases d
                WHERE d.id = v.db AND d.container = \(container) AND d.environment = \(environment.rawValue)
                  AND v.type = \(type) AND v.field = \(field)
                """)
        }
        let added = after.subtracting(before)
        for row in added {
            try await transaction.rows(
                """
                INSERT INTO schema_indexes (container, environment, type, kind, field)
                VALUES (\(container), \(environment.rawValue), \(row[0]), \(row[1]), \(row[2]))
                """)
        }
        for (type, rows) in Dictionary(grouping: added, by: { $0[0] }) {
            let layout = IndexLayout.RecordType(
                valueFields: rows.filter { $0[1] == "value" }.map { $0[2] }.sorted(),
                tokenFields: rows.filter { $0[1] == "token" }.map { $0[2] }.sorted())
            try await backfill(transaction, type: type, layout: layout, container: container, environment: environment)
        }
    }

    /// Writes the entries of `layout` for every live record of `type` in the container environment.
    func backfill(
        _ transaction: Transaction, type: String, layout: IndexLayout.RecordType, container: String,
        environment: ContainerEnvironment
    ) async throws {
        let records = try await transaction.rows(
            """
            SELECT r.db, r.zone, \(unescaped: Self.recordColumnsR)
            FROM databases d JOIN records r ON r.db = d.id
            WHERE d.container = \(container) AND d.environment = \(environment.rawValue) AND r.type = \(type) AND NOT r.deleted
            ORDER BY r.db
            """)
        var byDatabase: [Int64: (values: [ValueIndexEntry], tokens: [TokenIndexEntry])] = [:]
        for row in records {
            var columns = ColumnReader(row)
            let database: Int64 = try columns.next()
            let zone: String = try columns.next()
            let entries = try IndexEntries.rows(of: try columns.record(), zone: zone, layout: layout)
            byDatabase[database, default: ([], [])].values += entries.values
            byDatabase[database, default: ([], [])].tokens += entries.tokens
        }
        for (database, entries) in byDatabase {
            try await insert(transaction, database: database, values: entries.values, tokens: entries.tokens)
        }
    }
}
