import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NimbusProtocol
import NimbusStore
import Prometheus
import ServiceLifecycle
import UnixSignals

/// A running Nimbus server: the HTTP API on a port, its store, and its background services.
///
/// ```swift
/// let server = try await RunningServer.start(ServerConfiguration(port: 0, dataDirectory: dir))
/// print(server.baseURL)          // http://127.0.0.1:54321
/// try await server.stop()        // in-flight requests finish, the database closes
/// ```
public final class RunningServer: Sendable {
    /// The port the server listens on (the real one when the configuration asked for 0).
    public let port: Int
    public let host: String
    /// The storage engine: also the provisioning API (containers, users, tokens, keys).
    public let store: any NimbusStorage
    public let configuration: ServerConfiguration
    /// Every route of the API the HTTP router registers (`POST /database/**`, `GET /health`,
    /// …); the OpenAPI test checks that `openapi.yaml` describes each. Routes of
    /// ``ServerConfiguration/routeExtensions`` (the dashboard) are not listed.
    public let routes: [RegisteredRoute]
    /// The push hub: connected devices and the delivery of committed notifications.
    public let push: PushHub
    /// What this node served lately (the dashboard's live page).
    public let statistics: RequestStatistics
    private let serviceGroup: ServiceGroup
    private let runTask: Task<Void, any Error>
    private let collector: AssetCollector
    /// The spans of traced changes this node recorded, on their way to the store.
    public let traces: TraceJournal

    /// `http://host:port`.
    public var baseURL: String { "http://\(host):\(port)" }

    private init(
        port: Int, store: any NimbusStorage, configuration: ServerConfiguration, routes: [RegisteredRoute],
        push: PushHub, statistics: RequestStatistics, serviceGroup: ServiceGroup, runTask: Task<Void, any Error>,
        collector: AssetCollector, traces: TraceJournal
    ) {
        self.traces = traces
        self.statistics = statistics
        self.collector = collector
        self.port = port
        self.host = configuration.host
        self.store = store
        self.configuration = configuration
        self.routes = routes
        self.push = push
        self.serviceGroup = serviceGroup
        self.runTask = runTask
    }

    /// Starts serving on an open store; returns once the port is bound.
    ///
    /// The server owns `store` from here on: it closes it when it stops (or fails to start).
    /// Module `NimbusEngines` opens the store that ``ServerConfiguration/storage`` names and
    /// calls this (`RunningServer.start(configuration)`); an app that brings an engine of its
    /// own passes its store here.
    /// - Parameters:
    ///   - store: the storage engine, open and migrated.
    ///   - assetBytes: where asset bytes live for `store`.
    ///   - handleSignals: shut down gracefully on SIGINT and SIGTERM (`nimbus serve`).
    ///   - delivery: what write paths hand committed notifications to, given the server's push
    ///     hub (by default the hub itself); tests wrap the hub to record what is sent.
    public static func start(
        _ configuration: ServerConfiguration, store: any NimbusStorage, assetBytes: any AssetStore,
        handleSignals: Bool = false, logger: Logger = Logger(label: "nimbus"),
        delivery: @Sendable (PushHub) -> any PushDelivery = { $0 }
    ) async throws -> RunningServer {
        let (portStream, portContinuation) = AsyncStream<Int>.makeStream()
        // Per server, never `MetricsSystem.bootstrap`: servers in one process count apart.
        let registry = configuration.metrics.enabled ? PrometheusCollectorRegistry() : nil
        let metrics = registry.map { ServerMetrics(registry: $0) }
        let exporter = configuration.tracing.otlpEndpoint.map {
            OTLPExporter(
                endpoint: $0, headers: configuration.tracing.otlpHeaders.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                queueLimit: configuration.tracing.otlpQueueLimit, metrics: metrics, logger: logger)
        }
        let journal = TraceJournal(
            store: store, settings: configuration.tracing, metrics: metrics, exporter: exporter, logger: logger,
            clock: configuration.clock)
        let tracer = NimbusTracer(
            journal: journal, settings: configuration.tracing, random: { Double.random(in: 0..<1) },
            ids: TraceIDGenerator(seed: UInt64.random(in: .min ... .max)))
        let hub = PushHub(tracer: tracer, metrics: metrics)
        let links = AssetLinks(tokens: try store.changeTokens)
        let origins = OriginPolicy(configuration.origin)
        var api = CloudKitAPI(
            store: store, accounts: store, notifications: store,
            delivery: metrics.map { MeteredDelivery(inner: delivery(hub), metrics: $0) } ?? delivery(hub),
            schemas: SchemaRegistry(store: store), assets: store, clock: configuration.clock)
        api.assetSettings = configuration.assets
        api.tracer = tracer
        api.userQuotaBytes = configuration.userQuotaBytes
        api.containerQuotaBytes = configuration.containerQuotaBytes
        let uploadQuota =
            configuration.userQuotaBytes == nil && configuration.containerQuotaBytes == nil
            ? nil
            : UploadQuota(
                usage: store, userQuotaBytes: configuration.userQuotaBytes,
                containerQuotaBytes: configuration.containerQuotaBytes)
        api.uploadQuota = uploadQuota
        let accounts = AccountService(
            store: store, hasher: PasswordHasher(cost: configuration.signIn.passwordCost),
            mail: configuration.signIn.mailSender ?? LoggingMailSender(logger: logger),
            throttle: SignInThrottle(settings: configuration.signIn, clock: configuration.clock),
            clock: configuration.clock, settings: configuration.signIn)
        api.signIn = accounts
        api.identitySignIn = IdentitySignIn(
            store: store, verifier: IdentityTokenVerifier(fetcher: configuration.signIn.identityKeys, clock: configuration.clock),
            throttle: accounts.throttle, clock: configuration.clock)
        api.pushSessions = hub
        api.metrics = metrics
        var authenticator = Authenticator(
            accounts: store, signatureWindow: configuration.signatureWindow, clock: configuration.clock)
        authenticator.sessionPolicy = SessionPolicy(configuration.signIn)
        authenticator.sessions = store
        let statistics = RequestStatistics(metrics: metrics)
        var responder = APIResponder(
            api: api, authenticator: authenticator, maxBodyBytes: configuration.maxBodyBytes,
            assetLinks: links,
            assetDownloadLifetime: configuration.assets.downloadLifetime.milliseconds)
        responder.statistics = statistics
        responder.origins = origins
        responder.tracer = tracer
        responder.metrics = metrics
        let throttle = RequestThrottle(settings: configuration.throttle, store: store, clock: configuration.clock)
        responder.throttle = throttle
        var endpoint: MetricsEndpoint?
        if let registry, let metrics {
            endpoint = MetricsEndpoint(
                registry: registry, metrics: metrics, hub: hub, bearerToken: configuration.metrics.bearerToken)
        }
        let crossOrigin = CrossOriginRule(
            origins: origins, allowedOrigins: { try await store.signInSettings(container: $0).redirectOrigins })
        let router = Routes.build(
            responder: responder, statistics: statistics, metrics: endpoint, origins: origins, crossOrigin: crossOrigin)
        SignInPage.add(to: router, page: SignInPage(accounts: accounts, origins: origins))
        ShareLinkPage.add(to: router)
        var transfer = AssetTransfer(
            metadata: store, bytes: assetBytes, links: links, settings: configuration.assets, quota: uploadQuota)
        transfer.metrics = metrics
        AssetRoutes.add(
            to: router, transfer: transfer, clock: configuration.clock, throttle: throttle, crossOrigin: crossOrigin)
        let pushChannel = PushChannel(
            hub: hub, store: store, authenticator: authenticator, settings: configuration.push, logger: logger,
            clock: configuration.clock)
        PushRoutes.add(
            to: router, channel: pushChannel, crossOrigin: crossOrigin,
            courier: WebCourier(hub: hub, store: store, settings: configuration.push, clock: configuration.clock))
        let routes = router.routes.map { RegisteredRoute(method: $0.method.rawValue, path: $0.path.description) }
        // Beside the API, not part of it (nor of `routes`, which openapi.yaml describes).
        let parts = ServerParts(
            store: store,
            gateway: OperatorGateway(
                api: api, assetLinks: links, assetDownloadLifetime: configuration.assets.downloadLifetime.milliseconds,
                origins: origins),
            push: hub, statistics: statistics, configuration: configuration, logger: logger,
            passwords: PasswordHasher(cost: configuration.signIn.passwordCost), traces: journal)
        for routeExtension in configuration.routeExtensions {
            routeExtension.addRoutes(to: router, server: parts)
        }
        let limiter = ConnectionLimiter(limit: configuration.connections.maxConnectionsPerAddress)
        let app = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                PushHTTPChannel(
                    responder: responder, push: pushChannel, configuration: HTTP1Channel.Configuration(),
                    connections: configuration.connections, limiter: limiter, origins: origins)
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "nimbus"),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? configuration.port)
                portContinuation.finish()
            },
            logger: logger)
        let compactor = CompactionService(
            store: store, retention: configuration.tombstoneRetention, interval: configuration.compactionInterval,
            logger: logger, notifications: store, clock: configuration.clock)
        let sweeper = PushSweeper(hub: hub, settings: configuration.push)
        let collector = AssetCollector(
            metadata: store, bytes: assetBytes, settings: configuration.assets, logger: logger,
            clock: configuration.clock)
        let relay = RemoteNotificationRelay(store: store, hub: hub, logger: logger)
        let sessionWatcher = SessionWatcher(
            hub: hub, sessions: store, policy: SessionPolicy(configuration.signIn),
            interval: configuration.signIn.pushSessionCheckInterval, clock: configuration.clock, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                // Shut down in reverse: the sweeper first ends the couriers' long polls.
                // The trace journal first, so it stops last: its final flush sees every span;
                // the OpenTelemetry exporter before it, so it sends that flush too.
                services: (exporter.map { [$0] } ?? [] as [any Service])
                    + [journal, relay, app, compactor, collector, sessionWatcher, sweeper],
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
                logger: logger))
        let runTask = Task {
            do {
                try await group.run()
            } catch {
                try? await store.shutdown()
                throw error
            }
            try await store.shutdown()
        }
        var iterator = portStream.makeAsyncIterator()
        guard let port = await iterator.next() else {
            // The group ended before binding: surface its error.
            try await runTask.value
            throw CloudKitError(.internalError, "the server stopped before it started listening")
        }
        return RunningServer(
            port: port, store: store, configuration: configuration, routes: routes, push: hub, statistics: statistics, serviceGroup: group,
            runTask: runTask, collector: collector, traces: journal)
    }

    /// Stops accepting connections, lets in-flight requests finish, closes the database.
    public func stop() async throws {
        await serviceGroup.triggerGracefulShutdown()
        try await runTask.value
    }

    /// Waits until the server stops (after a signal, when started with `handleSignals`).
    public func waitUntilStopped() async throws {
        try await runTask.value
    }

    /// Runs one asset collection pass at `now` (milliseconds since the epoch; the configured
    /// clock's time by default) with the configured grace period.
    @discardableResult
    public func collectAssetsNow(now: Int64? = nil) async throws -> AssetCollectionReport {
        try await collector.collect(now: now ?? configuration.clock.nowMillis())
    }

    /// Runs one compaction pass now (by the configured clock) with the configured retention.
    @discardableResult
    public func compactNow() async throws -> CompactionReport {
        try await store.compact(
            retentionMillis: configuration.tombstoneRetention.milliseconds, now: configuration.clock.nowMillis())
    }
}
