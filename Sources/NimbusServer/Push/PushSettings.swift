/// How the push channel behaves. Every value has a default.
public struct PushSettings: Sendable {
    /// How often the server pings an idle WebSocket. A connection that has not answered the
    /// previous ping by the next one is closed.
    public var heartbeatInterval: Duration
    /// A connection whose socket accepts no bytes for this long (a dead or stalled peer) is
    /// closed, so it never holds pushes or memory for longer.
    public var writeTimeout: Duration
    /// Pushes queued for one connection at most. A connection that falls this far behind is
    /// closed; the device reconnects and gets one coalesced push for what it missed. Queued
    /// payloads are shared by every device they go to, so a queue entry costs a reference;
    /// leave room for a burst (one commit of 200 records can fire 200 query notifications).
    public var bufferLimit: Int
    /// How long a web courier long poll is held open before it returns empty.
    public var courierTimeout: Duration
    /// How often stalled connections are looked for (and heartbeats sent: at least twice per
    /// heartbeat interval).
    public var sweepInterval: Duration
    /// Monotonic time, for heartbeats and stalled sockets: `ContinuousClock.now` by default;
    /// tests inject their own.
    public var now: @Sendable () -> ContinuousClock.Instant = { .now }

    public init(
        heartbeatInterval: Duration = .seconds(30), writeTimeout: Duration = .seconds(10), bufferLimit: Int = 1024,
        courierTimeout: Duration = .seconds(30), sweepInterval: Duration = .seconds(1)
    ) {
        self.heartbeatInterval = heartbeatInterval
        self.writeTimeout = writeTimeout
        self.bufferLimit = bufferLimit
        self.courierTimeout = courierTimeout
        self.sweepInterval = sweepInterval
    }
}
