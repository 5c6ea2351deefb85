import Foundation
import Logging
import NimbusStore

/// Where a server node keeps its data: which engine, and where.
///
/// ```swift
/// var configuration = ServerConfiguration(port: 8080)
/// configuration.storage = .sqlite(directory: "nimbus-data")   // the default: zero configuration
/// ```
public enum StorageLocation: Sendable, Equatable, CustomStringConvertible {
    /// One embedded SQLite file, `DIR/nimbus.sqlite`; one server node.
    case sqlite(directory: String)

    /// Opens the engine, migrating its schema.
    public func open(logger: Logger) async throws -> any NimbusStorage {
        switch self {
        case .sqlite(let directory):
            return try SQLiteStore(directory: directory)
        }
    }

    /// What a log line or the `serve` banner says about it.
    public var description: String {
        switch self {
        case .sqlite(let directory):
            return "sqlite: " + (directory as NSString).appendingPathComponent("nimbus.sqlite")
        }
    }
}
