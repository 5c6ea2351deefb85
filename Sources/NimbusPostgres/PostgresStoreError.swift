/// Why the PostgreSQL engine cannot open or serve: each error says what to do about it.
///
/// Protocol errors (ZONE_NOT_FOUND, CONFLICT, …) are `CloudKitError`s, exactly as with the
/// SQLite engine; this type covers the engine itself.
public struct PostgresStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for code that reacts to it.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The connection URL is malformed or uses an option nimbus does not know.
        public static let invalidURL = Code("invalidURL")
        /// The `schema` option is not a plain identifier.
        public static let invalidSchemaName = Code("invalidSchemaName")
        /// The database's schema was migrated by a newer nimbus than this one.
        public static let schemaTooNew = Code("schemaTooNew")
        /// PostgreSQL could not be reached or refused the connection.
        public static let cannotConnect = Code("cannotConnect")
        /// The store was shut down.
        public static let closed = Code("closed")
        /// A stored row does not decode (the database was changed by something else).
        public static let corruptRow = Code("corruptRow")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
