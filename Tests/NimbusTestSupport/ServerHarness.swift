import Foundation
import Logging
import NIOConcurrencyHelpers
import NimbusEngines
import NimbusServer
import NimbusStore
import NimbusTestSupport

/// A real `nimbus` server on an ephemeral loopback port over fresh storage of one engine,
/// with one container provisioned: what every suite that talks to a server starts.
///
/// The harness owns a scratch ``directory`` (devices' local stores, files a test writes; on
/// SQLite the server's data too) and the server's storage, and removes both when it stops.
/// Prefer ``with(_:container:configure:logger:delivery:_:)``, which stops it whatever the
/// body does:
///
/// ```swift
/// try await ServerHarness.with(.postgres, container: "iCloud.com.example.app") { harness in
///     let user = try await harness.server.store.createUser(
///         name: "ana", email: nil, firstName: nil, lastName: nil, container: harness.container)
///     // … requests to harness.baseURL with harness.apiToken and user.token
/// }
/// ```
public final class ServerHarness: Sendable {
    /// What a harness was started with.
    private struct Setup: Sendable {
        var engine: Engine, directory: String
        /// The container provisioned at start, and its API token.
        var container: String, apiToken: String
        /// The configuration the server runs with, its port pinned once bound.
        var configuration: ServerConfiguration
        /// What each start of the server is given besides the configuration.
        var logger: Logger, delivery: @Sendable (PushHub) -> any PushDelivery

        func startServer() async throws -> RunningServer {
            try await RunningServer.start(configuration, logger: logger, delivery: delivery)
        }
    }

    private let setup: Setup
    private let current: NIOLockedValueBox<(server: RunningServer, removed: Bool)>

    /// The engine the server runs on.
    public var engine: Engine { setup.engine }
    /// Where the server keeps its data; open it again to act as another process would.
    public var storage: StorageLocation { setup.configuration.storage }
    /// The test's own directory, removed when the harness stops.
    public var directory: String { setup.directory }
    /// The container provisioned at start.
    public var container: String { setup.container }
    /// The container's API token.
    public var apiToken: String { setup.apiToken }
    /// What the server runs with (its port included, for ``restart()``).
    public var configuration: ServerConfiguration { setup.configuration }
    /// The running server (the one ``restart()`` started last).
    public var server: RunningServer { current.withLockedValue { $0.server } }
    /// The server's base URL, `http://127.0.0.1:PORT`.
    public var baseURL: String { server.baseURL }

    private init(setup: Setup, server: RunningServer) {
        self.setup = setup
        self.current = NIOLockedValueBox((server, false))
    }

    /// Starts a server on fresh storage of `engine` and provisions `container`.
    ///
    /// The configuration starts as `ServerConfiguration(port: 0)` on that storage, with an idle
    /// timeout (120 s) longer than the tests' HTTP client keeps an idle connection (60 s), so
    /// the client always drops it first; `configure` changes what a suite needs (clock, sign-in
    /// settings, mail, limits, route extensions, even the storage). Whoever calls this stops
    /// the harness; ``with(_:container:configure:logger:delivery:_:)`` does it for you.
    /// - Parameter delivery: what write paths hand committed notifications to, given the
    ///   server's push hub (the hub itself by default).
    public static func start(
        _ engine: Engine = .sqlite, container: String, configure: (inout ServerConfiguration) -> Void = { _ in },
        logger: Logger = Engine.quietLogger, delivery: @escaping @Sendable (PushHub) -> any PushDelivery = { $0 }
    ) async throws -> ServerHarness {
        let id = Engine.freshID()
        let directory = Engine.scratchDirectory(id)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var setup = Setup(
            engine: engine, directory: directory, container: container, apiToken: "",
            configuration: ServerConfiguration(port: 0), logger: logger, delivery: delivery)
        setup.configuration.connections.idleTimeout = .seconds(120)
        var server: RunningServer?
        do {
            setup.configuration.storage = try engine.storage(
                id: id, sqliteDirectory: (directory as NSString).appendingPathComponent("server"))
            if TestObjectStore.assetsEverywhere {
                setup.configuration.assets.location = .objectStore(try TestObjectStore.fresh(id))
            }
            configure(&setup.configuration)
            let started = try await setup.startServer()
            server = started
            setup.apiToken = try await started.store.createContainer(container).token
            setup.configuration.port = started.port
            return ServerHarness(setup: setup, server: started)
        } catch {
            try? await server?.stop()
            try? await setup.configuration.storage.removeAll(logger: Engine.quietLogger)
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// Runs `body` against a fresh server (see ``start(_:container:configure:logger:delivery:)``),
    /// then stops it and removes its storage and directory, also when `body` throws.
    public static func with<T>(
        _ engine: Engine = .sqlite, container: String, configure: (inout ServerConfiguration) -> Void = { _ in },
        logger: Logger = Engine.quietLogger, delivery: @escaping @Sendable (PushHub) -> any PushDelivery = { $0 },
        _ body: (ServerHarness) async throws -> T
    ) async throws -> T {
        let harness = try await start(engine, container: container, configure: configure, logger: logger, delivery: delivery)
        return try await scoped { try await body(harness) } cleanup: { try await harness.stop() }
    }

    /// Stops the server, keeping its storage and the directory (``restart()`` starts it again).
    /// Stopping a stopped server does nothing.
    public func stopServer() async throws {
        try await server.stop()
    }

    /// Starts the server again on the same storage and port (after ``stopServer()``, or
    /// stopping the running one first), as a restarted process would.
    public func restart() async throws {
        try await server.stop()
        let restarted = try await setup.startServer()
        current.withLockedValue { $0.server = restarted }
    }

    /// Stops the server and removes its storage and the directory; each step runs even when
    /// one before it failed, and the first failure is thrown. Stopping twice does nothing more.
    public func stop() async throws {
        var failure: (any Error)?
        do { try await server.stop() } catch { failure = error }
        let removedBefore = current.withLockedValue { state in
            defer { state.removed = true }
            return state.removed
        }
        if !removedBefore {
            do { try await storage.removeAll(logger: Engine.quietLogger) } catch { failure = failure ?? error }
            do {
                if FileManager.default.fileExists(atPath: directory) { try FileManager.default.removeItem(atPath: directory) }
            } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }
}

/// A suite's own harness type built on ``ServerHarness`` (its container, its clients): the
/// server, storage, directory and token come from the harness.
public protocol ServerHarnessLayer: Sendable {
    /// The server this layer is built on.
    var harness: ServerHarness { get }
}

extension ServerHarnessLayer {
    /// The running server.
    public var server: RunningServer { harness.server }
    /// Where the server keeps its data; open it again to act as another process would.
    public var storage: StorageLocation { harness.storage }
    /// The test's own directory, removed when the harness stops.
    public var directory: String { harness.directory }
    /// The container's API token.
    public var apiToken: String { harness.apiToken }
}

/// Runs `body`, then `cleanup`, also when `body` throws (then `body`'s error is thrown and
/// `cleanup`'s ignored).
public func scoped<T>(
    _ body: () async throws -> T, cleanup: () async throws -> Void
) async throws -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        try? await cleanup()
        throw error
    }
    try await cleanup()
    return result
}
