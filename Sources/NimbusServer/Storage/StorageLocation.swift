import Foundation
import Logging
import NimbusPostgres
import NimbusProtocol
import NimbusStore

/// Where a server node keeps its data: which engine, and where.
///
/// ```swift
/// var configuration = ServerConfiguration(port: 8080)
/// configuration.storage = .sqlite(directory: "nimbus-data")   // the default: zero configuration
/// configuration.storage = .postgres(url: "postgres://nimbus@db:5432/nimbus")   // several nodes
/// ```
public enum StorageLocation: Sendable, Equatable, CustomStringConvertible {
    /// One embedded SQLite file, `DIR/nimbus.sqlite`; one server node.
    case sqlite(directory: String)
    /// A PostgreSQL database shared by any number of server nodes; Nimbus's tables live in
    /// `schema` (created and migrated on start).
    case postgres(url: String, schema: String = "public")

    /// Opens the engine, migrating its schema.
    public func open(logger: Logger) async throws -> any NimbusStorage {
        switch self {
        case .sqlite(let directory):
            return try SQLiteStore(directory: directory)
        case .postgres(let url, let schema):
            return try await PostgresStore.open(url: url, schema: schema, logger: logger)
        }
    }

    /// Where asset bytes live for `store` (this location's engine): `directory` when one is
    /// configured (every node must mount it), else `DIR/assets` in SQLite mode and
    /// PostgreSQL itself in PostgreSQL mode.
    public func openAssets(for store: any NimbusStorage, directory: String?) throws -> any AssetStore {
        if let directory { return try FileAssetStore(directory: directory) }
        switch self {
        case .sqlite(let dataDirectory):
            return try FileAssetStore(directory: (dataDirectory as NSString).appendingPathComponent("assets"))
        case .postgres:
            guard let postgres = store as? PostgresStore else {
                throw CloudKitError(.internalError, "the PostgreSQL location opened another engine")
            }
            return PostgresAssetStore(store: postgres)
        }
    }

    /// What a log line or the `serve` banner says about it.
    public var description: String {
        switch self {
        case .sqlite(let directory):
            return "sqlite: " + (directory as NSString).appendingPathComponent("nimbus.sqlite")
        case .postgres(let url, let schema):
            return "postgres: \(PostgresStore.redactedURL(url)), schema \(schema)"
        }
    }

    /// Deletes everything stored here: the data directory, or the PostgreSQL schema with all
    /// its tables. For throwaway storage (benchmarks, tests); irreversible.
    public func removeAll(logger: Logger) async throws {
        switch self {
        case .sqlite(let directory):
            if FileManager.default.fileExists(atPath: directory) {
                try FileManager.default.removeItem(atPath: directory)
            }
        case .postgres(let url, let schema):
            try await PostgresStore.dropSchema(schema, url: url, logger: logger)
        }
    }
}
