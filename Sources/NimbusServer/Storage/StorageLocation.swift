import Foundation
import Logging
import NimbusPostgres
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

    /// What a log line or the `serve` banner says about it.
    public var description: String {
        switch self {
        case .sqlite(let directory):
            return "sqlite: " + (directory as NSString).appendingPathComponent("nimbus.sqlite")
        case .postgres(let url, let schema):
            return "postgres: \(Self.withoutPassword(url)), schema \(schema)"
        }
    }

    /// The URL with its password, if any, replaced by `***` (for logs).
    static func withoutPassword(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }
}
