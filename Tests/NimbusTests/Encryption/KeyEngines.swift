import Foundation
import Logging
import NimbusEngines
import NimbusServer
import NimbusStore

/// The storage engines the key tests run on: SQLite, and PostgreSQL when
/// `NIMBUS_TEST_POSTGRES_URL` names one (a throwaway schema per test, removed after it).
enum KeyEngines {
    static var all: [String] {
        (ProcessInfo.processInfo.environment["NIMBUS_TEST_POSTGRES_URL"] ?? "").isEmpty ? ["sqlite"] : ["sqlite", "postgres"]
    }

    static func with<T: Sendable>(_ engine: String, _ body: (LiveServer) async throws -> T) async throws -> T {
        var storage: StorageLocation?
        let url = ProcessInfo.processInfo.environment["NIMBUS_TEST_POSTGRES_URL"]
        do {
            let result = try await LiveServer.with(
                configure: { configuration in
                    guard engine == "postgres", let url else { return }
                    let id = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
                    configuration.storage = .postgres(url: url, schema: "nimbus_keys_\(id)")
                    storage = configuration.storage
                }, body)
            await remove(storage)
            return result
        } catch {
            await remove(storage)
            throw error
        }
    }

    private static func remove(_ storage: StorageLocation?) async {
        guard let storage else { return }
        var logger = Logger(label: "key-tests")
        logger.logLevel = .critical
        try? await storage.removeAll(logger: logger)
    }
}
