import NimbusProtocol
import NimbusStore
import PostgresNIO

/// The text of a statement on a hot path (every request, every write, every feed page),
/// run as a named prepared statement: PostgreSQL parses and plans it once per connection
/// instead of on every call (planning the feed query costs more than running it).
protocol StatementText: Sendable {
    static var sql: String { get }
    static var parameterTypes: [PostgresDataType] { get }
}

/// One execution of a ``StatementText`` with its parameters, in `$1, $2, …` order.
struct Prepared<Text: StatementText>: PostgresPreparedStatement {
    typealias Row = PostgresRow
    static var name: String { "nimbus_" + String(describing: Text.self) }
    static var sql: String { Text.sql }
    static var bindingDataTypes: [PostgresDataType] { Text.parameterTypes }

    private let bindings: PostgresBindings

    init(_ values: [(any PostgresDynamicTypeEncodable)?]) {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values {
            if let value { bindings.append(value) } else { bindings.appendNull() }
        }
        self.bindings = bindings
    }

    func makeBindings() -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}

extension PostgresStore {
    /// Runs a prepared statement outside a transaction.
    func rows<Text>(_ statement: Prepared<Text>) async throws -> [PostgresRow] {
        try checkOpen()
        do {
            var rows: [PostgresRow] = []
            for try await row in try await client.execute(statement, logger: logger) { rows.append(row) }
            return rows
        } catch let error as PSQLError {
            throw Self.mapped(error)
        }
    }
}

extension Transaction {
    /// Runs a prepared statement in the transaction.
    func rows<Text>(_ statement: Prepared<Text>) async throws -> [PostgresRow] {
        var rows: [PostgresRow] = []
        for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
        return rows
    }
}

/// The statements: see where each is used.
enum Statements {
    /// `lockDatabase(_:_:bump:)`: container, environment, scope, owner.
    enum BumpDatabaseVersion: StatementText {
        static let sql = """
            UPDATE databases SET version = version + 1
            WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4
            RETURNING id, version
            """
        static let parameterTypes: [PostgresDataType] = [.text, .text, .text, .text]
    }

    /// `zoneAndRecords`: database id, zone, record names.
    ///
    /// One primary-key probe per name (`unnest` and a fenced `LATERAL`), whatever the
    /// statistics: with `name = ANY($3)` the planner, not knowing yet that a young zone holds
    /// many rows, filters the zone's whole key range instead, and every write of a growing
    /// zone gets slower.
    enum ZoneAndRecords: StatementText {
        static let sql = """
            SELECT z.deleted, \(PostgresStore.recordColumnsR)
            FROM zones z
            LEFT JOIN LATERAL (
                SELECT found.* FROM unnest($3::text[]) AS wanted(name), LATERAL (
                    SELECT * FROM records WHERE db = $1 AND zone = $2 AND name = wanted.name OFFSET 0) AS found
            ) r ON true
            WHERE z.db = $1 AND z.name = $2
            """
        static let parameterTypes: [PostgresDataType] = [.int8, .text, .textArray]
    }

    /// `write(_:database:zone:changes:version:recordTypes:usage:)`: database id, zone, the
    /// twelve record columns as arrays, the new version, the record types touched, the rows'
    /// wire heads and tails (NULL for tombstones), the version the usage counter is expected
    /// at and the change of its record bytes. Upserts the rows, advances the zone's and the
    /// database's version, adds to the usage counter (``PostgresStore/usageAssignments(expectedVersion:version:recordBytes:assetBytes:)``)
    /// and reads the counter and the subscriptions the commit may fire (one row with no
    /// subscription when none may).
    enum WriteRecords: StatementText {
        static let sql = """
            WITH written AS (
                INSERT INTO records (db, zone, \(PostgresStore.recordColumns), wire_head, wire_tail, wire_version)
                SELECT $1, $2, t.*, t.version FROM unnest($3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $17, $18)
                    AS t(name, type, fields, created_at, created_by, created_device, modified_at, modified_by,
                         modified_device, version, created_version, deleted, wire_head, wire_tail)
                ON CONFLICT (db, zone, name) DO UPDATE SET
                    type = EXCLUDED.type, fields = EXCLUDED.fields,
                    wire_head = EXCLUDED.wire_head, wire_tail = EXCLUDED.wire_tail, wire_version = EXCLUDED.wire_version,
                    created_at = EXCLUDED.created_at, created_by = EXCLUDED.created_by,
                    created_device = EXCLUDED.created_device, modified_at = EXCLUDED.modified_at,
                    modified_by = EXCLUDED.modified_by, modified_device = EXCLUDED.modified_device,
                    version = EXCLUDED.version, created_version = EXCLUDED.created_version, deleted = EXCLUDED.deleted),
            zone_version AS (UPDATE zones SET change_version = $15 WHERE db = $1 AND name = $2),
            database_version AS (
                UPDATE databases SET version = $15,
                    \(PostgresStore.usageAssignments(expectedVersion: "$19", version: "$15", recordBytes: "$20", assetBytes: "0"))
                WHERE id = $1 RETURNING record_bytes, asset_bytes)
            SELECT u.record_bytes, u.asset_bytes, s.owner, s.definition, s.created_at
            FROM database_version u
            LEFT JOIN subscriptions s ON s.db = $1 AND (s.zone IS NULL OR s.zone = $2)
                AND (s.record_type IS NULL OR s.record_type = ANY($16))
            """
        static let parameterTypes: [PostgresDataType] = [
            .int8, .text, .textArray, .textArray, .textArray, .int8Array, .textArray, .textArray, .int8Array,
            .textArray, .textArray, .int8Array, .int8Array, .boolArray, .int8, .textArray, .textArray, .textArray,
            .int8, .int8,
        ]
    }

    /// `recordChanges`: container, environment, scope, owner, zone, since, limit; the record
    /// columns come first (see `PostgresRow.leadingRecord()`). Records
    /// created and deleted since the token are of no interest to the reader; with no token,
    /// no tombstone is. `version > 0` (always true) lets it use the partial feed index
    /// (schema version 5).
    enum RecordFeed: StatementText {
        static let sql = """
            SELECT \(PostgresStore.recordColumnsR), d.version, \(PostgresStore.zoneColumnsZ)
            \(source)
            ORDER BY r.version
            """
        static let parameterTypes: [PostgresDataType] = [.text, .text, .text, .text, .text, .int8, .int8]

        /// The database row, the zone (outer join) and the page's records (`r`, outer join).
        static let source = """
            FROM databases d
            LEFT JOIN zones z ON z.db = d.id AND z.name = $5
            LEFT JOIN LATERAL (
                SELECT * FROM records
                WHERE db = d.id AND zone = $5 AND version > 0 AND version > $6
                  AND NOT (deleted AND created_version > $6)
                ORDER BY version LIMIT $7
            ) r ON true
            WHERE d.container = $1 AND d.environment = $2 AND d.scope = $3 AND d.owner = $4
            """
    }

    /// `writtenRecordChanges`: as ``RecordFeed``, each record as its version and its written
    /// form (NULL when the row's wire parts are not those of its version: see schema
    /// version 6). Joining the page in the statement (`string_agg`) was measured slower:
    /// PostgreSQL's CPU per record doubled, and it runs on the same cores as the nodes. No
    /// `ORDER BY`: the rows come in the lateral scan's order, and sorting them again (a copy
    /// of the whole page, ≈ 40 % of the statement's time) would only confirm it; the node
    /// checks the order and sorts if it ever differs.
    enum WrittenRecordFeed: StatementText {
        static let sql = """
            SELECT r.version,
                CASE WHEN r.wire_version IS DISTINCT FROM r.version THEN NULL
                     WHEN r.deleted THEN r.wire_head
                     WHEN strpos(r.fields, 'null') > 0 THEN NULL
                     ELSE r.wire_head || r.fields || r.wire_tail END,
                d.version, \(PostgresStore.zoneColumnsZ)
            \(RecordFeed.source)
            """
        static let parameterTypes = RecordFeed.parameterTypes
    }

    /// `lookUpTokens`: API token, web auth token (or NULL).
    enum TokenLookup: StatementText {
        static let sql = """
            SELECT
                (SELECT container FROM tokens WHERE token = $1 AND kind = 'api' AND revoked_at IS NULL),
                s.container, s.id, s.last_seen_at, \(PostgresStore.identityColumns)
            FROM (SELECT 1) AS one
            LEFT JOIN sessions s ON s.token_hash = $2 AND s.revoked_at IS NULL
            LEFT JOIN users u ON u.name = s.user_name
            LEFT JOIN user_identities i ON i.user_name = s.user_name AND i.container = s.container
            """
        static let parameterTypes: [PostgresDataType] = [.text, .text]
    }
}

extension DatabaseKey {
    /// The four values naming the database row, for prepared statements.
    var parameters: [(any PostgresDynamicTypeEncodable)?] {
        [container, environment.rawValue, scope.rawValue, owner]
    }
}
