import Foundation
import NimbusStore

/// How a Nimbus server runs. Every value has a default, so `nimbus serve` needs none.
public struct ServerConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port (tests); the bound port is reported by ``RunningServer/port``.
    public var port: Int
    /// The engine and where its data lives: an SQLite file in a data directory by default.
    public var storage: StorageLocation
    /// How long tombstones (and deleted zones) are kept. A sync token older than this gets
    /// CHANGE_TOKEN_EXPIRED.
    public var tombstoneRetention: Duration
    /// How often the compactor removes expired tombstones.
    public var compactionInterval: Duration
    /// How far a server-to-server request's `X-Apple-CloudKit-Request-ISO8601Date` may be
    /// from the server's clock.
    public var signatureWindow: Duration
    /// The largest request body accepted by any operation: the ceiling of the operations' own
    /// limits (``APIOperation/maxBodyBytes``).
    public var maxBodyBytes: Int
    /// Where clients reach the server (`--public-url`) and whose forwarding headers it believes
    /// (`--trusted-proxy`): the origin of every absolute URL it writes (docs/SECURITY.md).
    public var origin = OriginSettings()
    /// The push channel: heartbeats, buffers, timeouts, the web courier.
    public var push = PushSettings()
    /// HTTP connections: header, body and idle timeouts, connections per address.
    public var connections = ConnectionSettings()
    /// Assets: the size limit, URL lifetimes, where bytes live, the collector's schedule.
    public var assets = AssetSettings()
    /// The time of day: records' `created` and `modified` timestamps, the ages compaction
    /// compares with ``tombstoneRetention``, the window of server-to-server signatures, and
    /// what the store stamps. The system clock by default; tests set a ``ManualWallClock``.
    public var clock: WallClock = .system
    /// The most bytes one user's private database may hold (records' fields plus the assets
    /// they reference, `DatabaseUsage`); `nil`: no quota. Over it, saves fail with
    /// QUOTA_EXCEEDED and write nothing; deletes free space at once.
    public var userQuotaBytes: Int64?
    /// Sessions and built-in accounts: idle expiry, password hashing, throttling, mail.
    public var signIn = SignInSettings()
    /// Rate limits and fairness of the API (docs/THROTTLING.md).
    public var throttle = ThrottleSettings()
    /// The most bytes a container's public database may hold, in each environment (records'
    /// fields plus the assets they reference, counted as for ``userQuotaBytes``); `nil`: no
    /// quota. Over it, saves to the public database fail with QUOTA_EXCEEDED and write
    /// nothing; deletes free space at once.
    public var containerQuotaBytes: Int64?
    /// Routes served beside the API, added after it (`nimbus serve` adds the dashboard).
    package var routeExtensions: [any RouteExtension] = []
    /// Prometheus metrics at `GET /metrics`: on by default, optionally behind a bearer token.
    public var metrics = MetricsSettings()
    /// Where the server's logger also writes, for the dashboard's live page (`nil`: nowhere).
    public var logTail: LogTail?
    /// Tracing of changes that carry a W3C `traceparent` (see ``TraceSettings``).
    public var tracing = TraceSettings()

    public init(
        host: String = "127.0.0.1", port: Int = 8080, dataDirectory: String = ServerConfiguration.defaultDataDirectory,
        tombstoneRetention: Duration = .seconds(30 * 24 * 3600), compactionInterval: Duration = .seconds(3600),
        signatureWindow: Duration = .seconds(600), maxBodyBytes: Int = 64 << 20
    ) {
        self.host = host
        self.port = port
        self.storage = .sqlite(directory: dataDirectory)
        self.tombstoneRetention = tombstoneRetention
        self.compactionInterval = compactionInterval
        self.signatureWindow = signatureWindow
        self.maxBodyBytes = maxBodyBytes
    }

    /// `./nimbus-data`, or `$NIMBUS_DATA` when set.
    public static var defaultDataDirectory: String {
        ProcessInfo.processInfo.environment["NIMBUS_DATA"] ?? "nimbus-data"
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
