import Prometheus

extension ServerMetrics {
    /// Metrics in `registry` (what `/metrics` renders), with Nimbus's latency buckets.
    convenience init(registry: PrometheusCollectorRegistry) {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[Self.latencyName] = Self.latencyBuckets
        self.init(factory: factory)
    }
}
