import Foundation
import GRDB
import NimbusEngines
import NimbusServer
import NimbusStore
import PostgresNIO

@testable import NimbusPostgres

/// SQL run straight on a server's storage, bypassing the server: how a test gives a
/// database the rows an older release (or a broken tool) left in it.
enum StoredRows {
    static func execute(_ statements: [String], on storage: StorageLocation) async throws {
        switch storage {
        case .sqlite(let directory):
            let queue = try DatabaseQueue(path: (directory as NSString).appendingPathComponent("nimbus.sqlite"))
            try await queue.write { db in
                for statement in statements { try db.execute(sql: statement) }
            }
            try queue.close()
        case .postgres(let url, let schema):
            let store = try await PostgresStore.open(url: url, schema: schema, logger: TestServer.quietLogger)
            do {
                for statement in statements { _ = try await store.rows(PostgresQuery(unsafeSQL: statement)) }
            } catch {
                try? await store.shutdown()
                throw error
            }
            try await store.shutdown()
        }
    }

    /// The integer a query of one row and one column answers.
    static func integer(_ query: String, on storage: StorageLocation) async throws -> Int64? {
        switch storage {
        case .sqlite(let directory):
            let queue = try DatabaseQueue(path: (directory as NSString).appendingPathComponent("nimbus.sqlite"))
            let value = try await queue.read { db in try Int64.fetchOne(db, sql: query) }
            try queue.close()
            return value
        case .postgres(let url, let schema):
            let store = try await PostgresStore.open(url: url, schema: schema, logger: TestServer.quietLogger)
            let value: Int64?
            do {
                value = try await store.rows(PostgresQuery(unsafeSQL: query)).first?.decode(Int64.self)
            } catch {
                try? await store.shutdown()
                throw error
            }
            try await store.shutdown()
            return value
        }
    }
}
