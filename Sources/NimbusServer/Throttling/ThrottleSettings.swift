import NimbusStore

/// How the server throttles the CloudKit API and asset transfers (`nimbus serve --throttle-*`,
/// see docs/THROTTLING.md): token buckets per signed-in user, per API token or
/// server-to-server key and per client address, and caps on the requests of one user and of
/// one address that run at once.
///
/// ```swift
/// var configuration = ServerConfiguration(port: 0, dataDirectory: dir)
/// configuration.throttle.defaults.userRate = 50       // requests/s per user, unless the container says otherwise
/// configuration.throttle.userInFlight = 2
/// configuration.throttle.contendedUserInFlight = 0  // keep 2 beside other users too
/// configuration.throttle.enabled = false              // or: no throttling at all
/// ```
public struct ThrottleSettings: Sendable {
    /// Off: no request is ever refused THROTTLED by these limits (sign-in throttling stays).
    public var enabled = true
    /// The limits of a container environment that sets none of its own
    /// (`nimbus container throttle`); every member is set.
    public var defaults = ThrottleLimits.serverDefaults
    /// Requests of one signed-in user run at once; more wait in order (0: no cap).
    public var userInFlight = 4
    /// Requests of one signed-in user run at once while another user's requests share the
    /// server (running or waiting, or arrived within ``contentionWindow``); 0: `userInFlight`
    /// throughout. A user alone gets the full cap for parallel work; beside others, one lane,
    /// so one user's flood leaves the other cores to everyone else.
    public var contendedUserInFlight = 1
    /// How recently another user's request must have arrived for a user to count as sharing
    /// the server.
    public var contentionWindow: Duration = .milliseconds(100)
    /// While another user's requests share the server, a user with requests waiting rests
    /// before each next one for this share of how long the last one ran (at most 20 ms): 0.5
    /// leaves its lane free about a third of the time. A user sending one request at a time
    /// never rests. 0: no rest.
    public var contendedRest: Double = 0.5
    /// While another user's requests share the server, the requests a user had waiting run in
    /// the background lane, at the lowest CPU priority (Linux's `SCHED_IDLE`): on busy cores
    /// the other users' requests go first. Off: they run as any request.
    public var backgroundLane = true
    /// In the background lane, a non-atomic batch of saves larger than this commits in
    /// transactions of at most this many records, in order: on SQLite another user's write
    /// waits for one part, not for the whole batch, behind its one writer (a 200-record
    /// transaction holds it about 2 ms, a part of 34 about 0.4 ms); on PostgreSQL the flood's
    /// backend works in shorter bursts. Each record still succeeds or fails on its own
    /// (``WritePolicy/transactionRecordLimit``). 0: whole batches. 34 took a quiet user's p99
    /// ratio beside 200-record floods from 2.01× to 1.91× against 50 on SQLite, for about 7 %
    /// of the flooder's rate, and from 1.92 – 2.15× to 1.60 – 1.68× against whole batches on
    /// PostgreSQL, for about 45 % (docs/PERFORMANCE.md, "Session 18" and "Session 19").
    public var backgroundTransactionRecords = 34
    /// Requests from one client address run at once; more wait in order (0: no cap).
    public var addressInFlight = 64
    /// Requests of one user or address that may wait for a place; one more is THROTTLED.
    public var maxWaiting = 256
    /// The most token buckets of each kind (users, tokens, addresses) held in memory.
    public var maxKeys = 100_000
    /// How long a container's stored limits are used before they are read again: a change
    /// made with `nimbus container throttle` applies on every node within this time.
    public var settingsRefresh: Duration = .seconds(5)

    public init() {}
}
