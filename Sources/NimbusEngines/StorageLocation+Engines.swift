import Foundation
import Logging
import NimbusObjectStore
import NimbusPostgres
import NimbusSQLite
import NimbusStore

extension StorageLocation {
    /// Opens the engine this location names, migrating its schema.
    ///
    /// ```swift
    /// let store = try await StorageLocation.sqlite(directory: "nimbus-data").open(logger: logger)
    /// defer { Task { try await store.shutdown() } }
    /// ```
    /// - Parameter clock: the time of day the store stamps rows with.
    public func open(logger: Logger, clock: WallClock = .system) async throws -> any NimbusStorage {
        switch self {
        case .sqlite(let directory):
            let pending = try SQLiteStore.pendingMigrations(directory: directory)
            if !pending.isEmpty {
                logger.notice(
                    "upgrading the store's schema before serving (a large store takes minutes: docs/DEPLOYMENT.md, SQLite upgrades)",
                    metadata: ["migrations": "\(pending.joined(separator: ", "))"])
            }
            return try SQLiteStore(directory: directory, clock: clock)
        case .postgres(let url, let schema):
            return try await PostgresStore.open(url: url, schema: schema, clock: clock, logger: logger)
        }
    }

    /// Where asset bytes live for `store` (this location's engine): `assets` when it names a
    /// place (a directory every node mounts, an S3-compatible bucket), else `DIR/assets` in
    /// SQLite mode and PostgreSQL itself in PostgreSQL mode.
    /// - Parameter environment: where an object store's credentials are read (`AWS_…`).
    public func openAssets(
        for store: any NimbusStorage, at assets: AssetLocation = .engineDefault, clock: WallClock = .system,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> any AssetStore {
        switch assets {
        case .directory(let directory):
            return try FileAssetStore(directory: directory)
        case .objectStore(let location):
            return try S3AssetStore(
                location: location, credentials: AWSCredentials.fromEnvironment(environment), clock: clock)
        case .engineDefault:
            break
        }
        switch self {
        case .sqlite(let dataDirectory):
            return try FileAssetStore(directory: (dataDirectory as NSString).appendingPathComponent("assets"))
        case .postgres:
            guard let postgres = store as? PostgresStore else {
                throw StorageEngineMismatch(location: self, engine: store.engineName)
            }
            return PostgresAssetStore(store: postgres)
        }
    }

    /// ``openAssets(for:at:clock:environment:)`` with `directory` (every node mounts it) or,
    /// for `nil`, the engine's default place.
    public func openAssets(for store: any NimbusStorage, directory: String?) throws -> any AssetStore {
        try openAssets(for: store, at: directory.map { .directory($0) } ?? .engineDefault)
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

/// A store handed to ``StorageLocation/openAssets(for:at:clock:environment:)`` that the location did not open.
struct StorageEngineMismatch: Error, CustomStringConvertible {
    let location: StorageLocation
    let engine: String

    var description: String {
        "the \(engine) engine's store is not the one \(location) opens; open it with StorageLocation.open(logger:clock:)"
    }
}
