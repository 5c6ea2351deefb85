import Crypto
import HTTPTypes
import Hummingbird
import NIOCore
import Prometheus

/// `GET /metrics`: the server's metrics in the Prometheus text format (version 0.0.4).
///
/// The push gauges are read from the hub at each scrape, so delivering a push costs no
/// gauge update. With ``MetricsSettings/bearerToken`` set, a request without
/// `Authorization: Bearer <token>` gets 401 and no metrics.
///
/// ```sh
/// curl -H 'Authorization: Bearer s3cret' http://127.0.0.1:8080/metrics
/// ```
struct MetricsEndpoint: Sendable {
    static let path = "/metrics"

    let registry: PrometheusCollectorRegistry
    let metrics: ServerMetrics
    let hub: PushHub
    /// SHA-256 of the bearer token (compared in constant time); `nil`: no token needed.
    let tokenDigest: [UInt8]?

    init(registry: PrometheusCollectorRegistry, metrics: ServerMetrics, hub: PushHub, bearerToken: String?) {
        self.registry = registry
        self.metrics = metrics
        self.hub = hub
        self.tokenDigest = bearerToken.map { Array(SHA256.hash(data: Array($0.utf8))) }
    }

    func add(to router: Router<BasicRequestContext>) {
        router.get(RouterPath(Self.path)) { request, _ in
            await respond(to: request)
        }
    }

    func respond(to request: Request) async -> Response {
        guard isAuthorized(request.headers[.authorization]) else {
            var headers = HTTPFields()
            headers[.wwwAuthenticate] = #"Bearer realm="nimbus-metrics""#
            headers[.contentType] = "text/plain; charset=utf-8"
            return Response(
                status: .unauthorized, headers: headers,
                body: ResponseBody(
                    byteBuffer: ByteBuffer(
                        string: "/metrics needs 'Authorization: Bearer <token>' with the token given to --metrics-token\n")))
        }
        let push = await hub.gaugeReadings()
        metrics.setPush(connections: push.connections, queuedFrames: push.queuedFrames)
        var bytes: [UInt8] = []
        registry.emit(into: &bytes)
        bytes = MetricHelp.adding(to: bytes)
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// Whether `header` carries the configured bearer token (always, without one).
    func isAuthorized(_ header: String?) -> Bool {
        guard let tokenDigest else { return true }
        let prefix = "Bearer "
        guard let header, header.count > prefix.count, header.prefix(prefix.count).lowercased() == prefix.lowercased()
        else { return false }
        let given = Array(SHA256.hash(data: Array(header.dropFirst(prefix.count).utf8)))
        var difference: UInt8 = 0
        for (a, b) in zip(given, tokenDigest) { difference |= a ^ b }
        return difference == 0
    }
}
