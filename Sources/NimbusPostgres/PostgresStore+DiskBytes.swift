import PostgresNIO

extension PostgresStore {
    /// The bytes this store's schema takes on disk: every table with its indexes and TOAST
    /// (`pg_total_relation_size`). `nimbus-bench growth` divides it by the records stored.
    package func diskBytes() async throws -> Int64 {
        let rows = try await rows(
            """
            SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = \(schema) AND c.relkind = 'r'
            """)
        return try rows.first?.decode(Int64.self) ?? 0
    }
}
