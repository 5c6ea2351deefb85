import Foundation
import Logging
import NimbusPostgres
import NimbusServer

/// Removes what a test's storage left behind: the data directory, or the PostgreSQL schema.
enum TestStorage {
    static func remove(_ storage: StorageLocation) async throws {
        switch storage {
        case .sqlite(let directory):
            try? FileManager.default.removeItem(atPath: directory)
        case .postgres(let url, let schema):
            var logger = Logger(label: "nimbus-test")
            logger.logLevel = .critical
            try await PostgresStore.dropSchema(schema, url: url, logger: logger)
        }
    }
}
