import Foundation

/// Where a server node keeps its data: which engine, and where.
///
/// ```swift
/// var configuration = ServerConfiguration(port: 8080)
/// configuration.storage = .sqlite(directory: "nimbus-data")   // the default: zero configuration
/// configuration.storage = .postgres(url: "postgres://nimbus@db:5432/nimbus")   // several nodes
/// ```
///
/// A location only names the storage. Opening it takes the engine, which the storage core
/// does not link: module `NimbusEngines` opens the engines Nimbus ships
/// (`StorageLocation.open(logger:clock:)`), and `nimbus serve` composes them.
public enum StorageLocation: Sendable, Equatable, CustomStringConvertible {
    /// One embedded SQLite file, `DIR/nimbus.sqlite`; one server node.
    case sqlite(directory: String)
    /// A PostgreSQL database shared by any number of server nodes; Nimbus's tables live in
    /// `schema` (created and migrated on start).
    case postgres(url: String, schema: String = "public")

    /// What a log line or the `serve` banner says about it (never a password).
    public var description: String {
        switch self {
        case .sqlite(let directory):
            return "sqlite: " + (directory as NSString).appendingPathComponent("nimbus.sqlite")
        case .postgres(let url, let schema):
            return "postgres: \(Self.redacted(url)), schema \(schema)"
        }
    }

    /// `url` with its password, if any, replaced by `***`: what logs and banners may show.
    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }
}
