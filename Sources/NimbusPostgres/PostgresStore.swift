import Foundation
import Logging
import NIOConcurrencyHelpers
import NimbusStore
import PostgresNIO

/// The PostgreSQL engine: any number of stateless Nimbus nodes sharing one database.
///
/// `PostgresStore` implements ``NimbusStorage`` with exactly the semantics of ``SQLiteStore``:
/// the CloudKit rules of a modify come from ``ModifyPlanner``, those of subscriptions from
/// ``SubscriptionMatcher``; this type only reads and writes rows.
///
/// ```swift
/// let store = try await PostgresStore.open(url: "postgres://nimbus@db.internal/nimbus", logger: logger)
/// defer { Task { try await store.shutdown() } }
/// ```
///
/// ## Change tokens across nodes
///
/// Every write transaction first runs
/// `UPDATE databases SET version = version + 1 … RETURNING version` (see
/// `lockDatabase(_:_:)`): the row lock it takes serialises the commits of one database
/// across every node, while different users' databases commit in parallel. Because a
/// transaction allocates its versions while holding that lock and keeps it until it commits,
/// versions become visible in the order they were allocated, and a `records/changes` reader
/// (one statement, one snapshot) can never see version *n + 1* without *n*: it never skips
/// a commit. The same lock makes locked saves correct: the planner reads the rows only after
/// taking it, so a `recordChangeTag` check cannot race with another node's write.
///
/// ### Why READ COMMITTED is enough
///
/// - The `UPDATE` that takes the lock waits for the previous holder to commit, then
///   re-reads the row (PostgreSQL re-evaluates an updated row after a lock wait), so
///   `version + 1` builds on the latest committed version: no two commits share a version.
/// - Under READ COMMITTED each later statement of the transaction takes a fresh snapshot,
///   which includes the previous holder's commit: the rows the planner reads (change tags,
///   EXISTS, VALIDATE targets, DELETE_SELF children) are the latest. Under REPEATABLE READ
///   the snapshot would date from the lock statement and a concurrent commit would instead
///   fail the transaction with a serialization error.
/// - PostgreSQL makes a transaction visible to new snapshots before it releases its locks,
///   so the commit holding versions *n…m* is visible before the next holder can even
///   allocate *m + 1*. Any snapshot that shows a commit of a database shows every earlier
///   commit of it: the visible versions are always a prefix.
/// - A reader uses one statement, hence one snapshot, for the records and for the
///   database version its token is made of; every version up to that one is in the snapshot.
///
/// A sequence or a version allocated at the end of the transaction would not do: values
/// handed out in one order can commit in another, and a reader that saw the later one
/// would skip the earlier for good.
///
/// ## Notifications across nodes
///
/// A transaction that creates notifications also runs `pg_notify` on a channel named after
/// the schema; PostgreSQL delivers on commit, in commit order. ``remoteNotifications()``
/// listens on that channel and yields what other nodes committed.
///
/// ## Topics
/// - ``open(url:schema:maximumConnections:random:clock:logger:)``
/// - ``shutdown()``
/// - ``remoteNotifications()``
/// - ``PostgresStoreError``
public final class PostgresStore: Sendable {
    /// The connection pool; its `run()` runs in a task this store owns.
    let client: PostgresClient
    let logger: Logger
    /// The PostgreSQL schema holding every table of this store.
    public let schema: String
    /// Identifies this store instance (this node) in cross-node notifications, so that a
    /// node ignores its own commits.
    public let nodeID: UUID
    /// The LISTEN/NOTIFY channel of ``schema``.
    let channel: String
    /// What the store stamps rows with: zones' deletion, tokens, keys, subscriptions.
    public let clock: WallClock
    /// The token lookups answered lately, served while ``accountWatch`` hears every change
    /// to the rows they were read from (``lookUpTokens(apiToken:webAuthToken:)``).
    let tokenLookups = TokenLookupCache()
    /// The LISTEN/NOTIFY channel the account tables' triggers announce changes on.
    let accountsChannel: String
    private let state = NIOLockedValueBox(State())

    private struct State {
        var runTask: Task<Void, Never>?
        var listeners: [UUID: Task<Void, Never>] = [:]
        var closed = false
        var accountWatch = AccountWatch.off
        var accountWatchObservers: [UUID: AsyncStream<AccountWatchEvent>.Continuation] = [:]
        /// Set by ``open(url:schema:maximumConnections:random:clock:logger:)`` once the schema is migrated.
        var changeTokens: ChangeTokens?
    }

    /// Sync tokens, signed with the secret every node of the database shares.
    public var changeTokens: ChangeTokens {
        get throws {
            guard let tokens = state.withLockedValue({ $0.changeTokens }) else {
                throw PostgresStoreError(.closed, "the PostgreSQL store is not open")
            }
            return tokens
        }
    }

    private init(client: PostgresClient, schema: String, clock: WallClock, logger: Logger) {
        self.client = client
        self.schema = schema
        self.clock = clock
        self.logger = logger
        self.nodeID = UUID()
        self.channel = Self.channelName(schema: schema)
        self.accountsChannel = Self.accountsChannelName(schema: schema)
    }

    /// Connects to PostgreSQL, creates the schema if missing and migrates it.
    ///
    /// Several nodes may open the same database at once: migrations run in one transaction
    /// under an advisory lock. A node whose schema is newer than this build knows refuses to
    /// start (``PostgresStoreError/Code/schemaTooNew``).
    ///
    /// - Parameters:
    ///   - url: `postgres://user:password@host:port/database` (`postgresql://` too), with an
    ///     optional `?sslmode=disable|prefer|require` (default `prefer`). A `host` query
    ///     parameter naming a directory connects through that Unix socket.
    ///   - schema: the PostgreSQL schema for every table (created if missing). Letters, digits
    ///     and `_`, starting with a letter or `_`, at most 63 characters.
    ///   - maximumConnections: the size of the connection pool.
    ///   - random: where the server secret comes from when the database has none yet.
    ///   - clock: the time of day the store stamps rows with (``WallClock/system`` by default).
    ///   - logger: where the store and the PostgreSQL driver log.
    public static func open(
        url: String, schema: String = "public", maximumConnections: Int = 12,
        random: any RandomNumberGenerator = SystemRandomNumberGenerator(), clock: WallClock = .system, logger: Logger
    ) async throws -> PostgresStore {
        try validate(schema: schema)
        var configuration = try PostgresURL.configuration(from: url)
        configuration.options.additionalStartupParameters = Self.sessionParameters(schema: schema)
        configuration.options.maximumConnections = max(2, maximumConnections)
        configuration.options.minimumConnections = 1
        let store = PostgresStore(
            client: PostgresClient(configuration: configuration, backgroundLogger: logger), schema: schema,
            clock: clock, logger: logger)
        store.state.withLockedValue { $0.runTask = store.startClient() }
        var random = random
        let candidate = ChangeTokens.newSecret(using: &random)
        do {
            try await store.migrate()
            let secret = try await store.changeTokenSecret(candidate: candidate)
            store.state.withLockedValue { $0.changeTokens = ChangeTokens(secret: secret) }
        } catch {
            try? await store.shutdown()
            if error is PostgresStoreError { throw error }
            throw PostgresStoreError(
                .cannotConnect,
                "cannot open the PostgreSQL database at \(PostgresURL.redacted(url)) (schema \(schema)): \(String(reflecting: error))")
        }
        logger.info("postgres store open", metadata: ["schema": "\(schema)", "node": "\(store.nodeID)"])
        return store
    }

    /// Runs the pool. Where available the task starts at once, so the pool runs before the
    /// first lease (which otherwise logs a warning).
    private func startClient() -> Task<Void, Never> {
        if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, *) {
            return Task.immediate { await self.client.run() }
        }
        return Task { await self.client.run() }
    }

    /// Finishes every ``remoteNotifications()`` stream and closes the connections. Further
    /// use throws. Calling it again does nothing.
    public func shutdown() async throws {
        let (listeners, runTask) = state.withLockedValue { state in
            let taken = (Array(state.listeners.values), state.closed ? nil : state.runTask)
            state.listeners = [:]
            state.closed = true
            return taken
        }
        for listener in listeners {
            listener.cancel()
            await listener.value
        }
        finishAccountWatchEvents()
        runTask?.cancel()
        await runTask?.value
    }

    /// Throws once the store is shut down.
    func checkOpen() throws {
        if state.withLockedValue({ $0.closed }) {
            throw PostgresStoreError(.closed, "the PostgreSQL store was shut down")
        }
    }

    /// Registers a listener task so that ``shutdown()`` finishes it; `false` (and nothing
    /// registered) when the store is already closed.
    func register(listener id: UUID, _ task: Task<Void, Never>) -> Bool {
        state.withLockedValue { state in
            guard !state.closed else { return false }
            state.listeners[id] = task
            return true
        }
    }

    func unregister(listener id: UUID) {
        _ = state.withLockedValue { $0.listeners.removeValue(forKey: id) }
    }

    /// Moves the account watch from `expected` to `next`; `false` (nothing changed) when it
    /// was elsewhere or the store is closed.
    func moveAccountWatch(from expected: AccountWatch, to next: AccountWatch) -> Bool {
        state.withLockedValue { state in
            guard !state.closed, state.accountWatch == expected else { return false }
            state.accountWatch = next
            return true
        }
    }

    /// Where the account watch is.
    var accountWatch: AccountWatch { state.withLockedValue { $0.closed ? .off : $0.accountWatch } }

    /// What the account watch does from now on, until the store shuts down.
    func accountWatchEvents() -> AsyncStream<AccountWatchEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AccountWatchEvent.self)
        let id = UUID()
        let added = state.withLockedValue { state in
            guard !state.closed else { return false }
            state.accountWatchObservers[id] = continuation
            return true
        }
        guard added else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLockedValue { $0.accountWatchObservers.removeValue(forKey: id) }
        }
        return stream
    }

    func emit(_ event: AccountWatchEvent) {
        for observer in state.withLockedValue({ Array($0.accountWatchObservers.values) }) { observer.yield(event) }
    }

    func finishAccountWatchEvents() {
        let observers = state.withLockedValue { state in
            defer { state.accountWatchObservers = [:] }
            return Array(state.accountWatchObservers.values)
        }
        for observer in observers { observer.finish() }
    }

    static func validate(schema: String) throws {
        let allowed = schema.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
        }
        guard allowed, let first = schema.utf8.first, !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")),
            schema.utf8.count <= 63
        else {
            throw PostgresStoreError(
                .invalidSchemaName,
                "'\(schema)' is not a schema name nimbus uses: letters, digits and '_', starting with a letter or '_', "
                    + "at most 63 characters")
        }
    }
}

extension PostgresStore: NimbusStorage {
    public var engineName: String { "postgres" }
}
