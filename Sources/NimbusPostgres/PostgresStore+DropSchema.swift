import Logging
import PostgresNIO

extension PostgresStore {
    /// Drops `schema` and every table in it: the throwaway storage of a benchmark or a test.
    /// Irreversible; never point it at a schema that holds data you want.
    public static func dropSchema(_ schema: String, url: String, logger: Logger) async throws {
        let store = try await open(url: url, schema: schema, maximumConnections: 2, logger: logger)
        do {
            try await store.rows("DROP SCHEMA \(unescaped: "\"\(schema)\"") CASCADE")
        } catch {
            try? await store.shutdown()
            throw error
        }
        try await store.shutdown()
    }
}
