/// Whether the server serves its metrics at `GET /metrics`, and to whom.
///
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.metrics.bearerToken = "s3cret"   // scrapers send `Authorization: Bearer s3cret`
/// configuration.metrics.enabled = false          // or: no `/metrics` at all (404), nothing counted
/// ```
public struct MetricsSettings: Sendable {
    /// Count and serve metrics (`nimbus serve --metrics`, the default; `--no-metrics` turns them off).
    public var enabled: Bool
    /// When set, `/metrics` answers only requests with `Authorization: Bearer <token>` (401
    /// otherwise); `nil`: anyone who reaches the port may scrape.
    public var bearerToken: String?

    public init(enabled: Bool = true, bearerToken: String? = nil) {
        self.enabled = enabled
        self.bearerToken = bearerToken
    }
}
