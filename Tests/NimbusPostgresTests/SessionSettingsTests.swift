import NimbusStore
import PostgresNIO
import Testing

@testable import NimbusPostgres

extension PostgresTests {
    /// The settings each pooled connection runs with, whatever the server's defaults.
    @Suite("Session settings")
    struct SessionSettingsTests {
        /// JIT compilation stays off on every connection: with it, writes to a database of a
        /// million records paid about 40 ms each to compile their plan (PostgresStore+Session).
        /// Several statements at once take several connections from the pool.
        @Test func everyConnectionRunsWithoutJIT() async throws {
            try await TestPostgres.withNodes { nodes in
                let store = nodes[0]
                let schema = try await store.rows("SELECT current_schema()").first?.decode(String.self)
                let settings = try await withThrowingTaskGroup(of: [String].self) { group in
                    for _ in 0..<6 {
                        group.addTask {
                            let rows = try await store.rows(
                                "SELECT current_setting('jit'), current_schema(), pg_sleep(0.05)::text")
                            return try rows.map { try $0.decode((String, String, String).self) }.map { "\($0.0) \($0.1)" }
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
                #expect(schema?.hasPrefix("nimbus_test_") == true)
                #expect(settings == Array(repeating: "off \(schema ?? "")", count: 6))
            }
        }
    }
}
