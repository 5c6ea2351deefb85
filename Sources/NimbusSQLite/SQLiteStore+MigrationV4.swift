import GRDB
import NimbusStore

extension SQLiteStore {
    /// Schema v4: the schema of each container environment and the query index entries.
    ///
    /// - `schemas`: the schema document (``SchemaFile`` text) and its version.
    /// - `schema_indexes`: the schema's ``IndexLayout`` as rows (`kind` is `value` or
    ///   `token`), which record writes read inside their transaction.
    /// - `record_values`: value-index entries, ordered as scans read them
    ///   (`value, name, zone` within a database, type and index). `value` has no type
    ///   affinity: INTEGER, REAL and TEXT keys keep their kind and SQLite orders them as
    ///   ``IndexValue`` does (numbers numerically, then text by bytes: UTF-8 byte order is
    ///   Unicode scalar order); the missing key is the BLOB `x'00'`, after every other key.
    /// - `record_tokens`: token-index entries, ordered by record within a token (whatever
    ///   the field), so one token's records stream in result order and a second token is a
    ///   point lookup.
    static func migrateV4(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE schemas (
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    document TEXT NOT NULL,
                    PRIMARY KEY (container, environment)
                ) WITHOUT ROWID;
                CREATE TABLE schema_indexes (
                    container TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    type TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    field TEXT NOT NULL,
                    PRIMARY KEY (container, environment, type, kind, field)
                ) WITHOUT ROWID;
                CREATE TABLE record_values (
                    db INTEGER NOT NULL,
                    type TEXT NOT NULL,
                    field TEXT NOT NULL,
                    value NOT NULL,
                    name TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    PRIMARY KEY (db, type, field, value, name, zone)
                ) WITHOUT ROWID;
                CREATE TABLE record_tokens (
                    db INTEGER NOT NULL,
                    type TEXT NOT NULL,
                    token TEXT NOT NULL,
                    name TEXT NOT NULL,
                    zone TEXT NOT NULL,
                    field TEXT NOT NULL,
                    PRIMARY KEY (db, type, token, name, zone, field)
                ) WITHOUT ROWID;
                """)
    }
}
