extension PostgresStore {
    /// The settings every connection starts with (startup parameters, so a pooled connection
    /// never runs a statement without them):
    /// - `search_path`: the store's schema, so statements name tables without it.
    /// - `jit = off`: a write's `UPDATE databases` carries the usage recount (a sum over the
    ///   database's records, run only after a node of an older release wrote; see
    ///   ``usageAssignments(expectedVersion:version:recordBytes:assetBytes:)``). Its cost
    ///   estimate grows with the database, and past about 700,000 records it crosses
    ///   `jit_above_cost`: PostgreSQL then compiled every write's plan, about 40 ms each,
    ///   ten times the write itself (single-record modify p50 5 ms at 100k records, 47 ms at
    ///   1M; 5 ms at 1M without JIT). Nimbus's statements read a few rows by index, which
    ///   JIT never speeds up.
    static func sessionParameters(schema: String) -> [(String, String)] {
        [("search_path", "\"\(schema)\""), ("jit", "off")]
    }
}
