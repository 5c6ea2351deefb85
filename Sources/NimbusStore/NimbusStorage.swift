import NimbusProtocol

/// Everything one server node needs from its engine: records and zones, subscriptions and
/// notifications, provisioning, the schemas of container environments, and what each database
/// holds.
///
/// Nimbus ships two engines: ``SQLiteStore`` (one embedded file, one node) and
/// `PostgresStore` (module `NimbusPostgres`: any number of stateless nodes on one
/// PostgreSQL database). The server and the `nimbus` CLI only ever talk to this protocol.
public protocol NimbusStorage:
    RecordStore, NotificationStore, AccountStore, SessionStore, SignInStore, IdentityLoginStore, AccountDeletionStore,
    SchemaStore, AssetMetadataStore, UsageStore, OperatorStore, ThrottleStore, TraceStore
{
    /// A short name of the engine for logs and benchmark tables (`sqlite`, `postgres`).
    var engineName: String { get }

    /// Notifications committed through *other* server nodes sharing this storage, in
    /// commit order, for this node's push hub to deliver to the devices connected to it.
    ///
    /// Notifications committed through this process are not repeated here: the node that
    /// made the write delivers them itself from ``CommitSummary/notifications``. A
    /// single-node engine returns a stream that finishes at once. Each call returns a new
    /// stream; the stream finishes when the storage closes.
    func remoteNotifications() -> AsyncStream<[StoredNotification]>

    /// Closes connections and files. Further use throws.
    func shutdown() async throws
}
