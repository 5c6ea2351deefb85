/// How the server guards its HTTP connections: how long a client may take to send a request,
/// how long an idle connection stays open, how many connections one address may hold.
/// Every value has a default, chosen so that no honest client meets it.
///
/// None of these applies to an accepted push WebSocket (it has its own heartbeat, see
/// ``PushSettings``), and a request the server is answering (a web courier long poll, a
/// slow query) is never timed out by them.
public struct ConnectionSettings: Sendable {
    /// A new connection's first request head (request line and headers) must have arrived
    /// within this time. A head is a few hundred bytes to a few kilobytes: 10 s covers a
    /// poor mobile link, and closes slowloris connections (a header sent a byte at a time).
    public var headerTimeout: Duration
    /// While the server waits for a request body, some of it must arrive within this time,
    /// or the connection is closed (a client that stops mid-body, or sends a trickle that
    /// never completes a read). The clock runs only while the server is asking for bytes.
    public var bodyTimeout: Duration
    /// A keep-alive connection with no request in progress is closed after this long; the
    /// next request's head must have arrived by then. Behind a load balancer keep it above
    /// the balancer's own idle timeout (AWS's default is 60 s), so the balancer closes first.
    public var idleTimeout: Duration
    /// Connections one remote address may hold open at once (0: no limit). The next one is
    /// answered `429 THROTTLED` and closed. An accepted push WebSocket (an authenticated
    /// device) stops counting once it is open, so devices behind one NAT are not capped.
    /// Behind a load balancer or reverse proxy every connection comes from its address: set 0
    /// and limit clients at the balancer.
    public var maxConnectionsPerAddress: Int

    public init(
        headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(30), idleTimeout: Duration = .seconds(60),
        maxConnectionsPerAddress: Int = 256
    ) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
    }

    /// How long a connection the server closes after an early answer (a refused body) goes on
    /// reading and discarding what the client still sends, so the client reads the answer
    /// instead of a reset (RFC 9112 §9.6).
    static let lingerTime: Duration = .seconds(2)
}
