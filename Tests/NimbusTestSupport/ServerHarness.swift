import Foundation
import Logging
import NIOConcurrencyHelpers
import NimbusEngines
import NimbusServer
import NimbusStore

/// A real `nimbus` server on an ephemeral loopback port over fresh storage of one engine,
/// with one container provisioned: what every suite that talks to a server starts.
///
/// The harness owns a scratch ``directory`` (devices' local stores, files a test writes; on
/// SQLite the server's data too) and the server's storage, and removes both when it stops.
/// Prefer ``with(_:container:nodes:configure:logger:delivery:_:)``, which stops it whatever
/// the body does:
///
/// ```swift
/// try await ServerHarness.with(.postgres, container: "iCloud.com.example.app") { harness in
///     let user = try await harness.server.store.createUser(
///         name: "ana", email: nil, firstName: nil, lastName: nil, container: harness.container)
///     // … requests to harness.baseURL with harness.apiToken and user.token
/// }
/// ```
///
/// It also runs what tests of several processes need, each server still stopped by the
/// harness: more nodes on the same storage (`nodes: 2`, or ``startNode(configure:)``; on
/// PostgreSQL, as behind a load balancer), and a restart on the same storage and port,
/// with a changed configuration if asked (``restart(configure:)``).
public final class ServerHarness: Sendable {
    /// What a harness was started with.
    private struct Setup: Sendable {
        var engine: Engine, directory: String
        /// The container provisioned at start, and its API token.
        var container: String, apiToken: String
        /// What each start of a server is given besides the configuration.
        var logger: Logger, delivery: @Sendable (PushHub) -> any PushDelivery

        func startServer(_ configuration: ServerConfiguration) async throws -> RunningServer {
            try await RunningServer.start(configuration, logger: logger, delivery: delivery)
        }
    }

    /// What changes while the harness runs.
    private struct State: Sendable {
        /// The first node (the one ``restart(configure:)`` restarts), and the configuration it
        /// runs with, its port pinned once bound.
        var server: RunningServer, configuration: ServerConfiguration
        /// The other nodes, in the order they started.
        var others: [RunningServer] = []
        /// Whether ``stop()`` removed the storage and the directory.
        var removed = false
    }

    private let setup: Setup
    private let state: NIOLockedValueBox<State>

    /// The engine the server runs on.
    public var engine: Engine { setup.engine }
    /// Where the server keeps its data; open it again to act as another process would.
    public var storage: StorageLocation { configuration.storage }
    /// The test's own directory, removed when the harness stops.
    public var directory: String { setup.directory }
    /// The container provisioned at start.
    public var container: String { setup.container }
    /// The container's API token.
    public var apiToken: String { setup.apiToken }
    /// What the server runs with (its port included, for ``restart(configure:)``).
    public var configuration: ServerConfiguration { state.withLockedValue { $0.configuration } }
    /// The running server (the one ``restart(configure:)`` started last).
    public var server: RunningServer { state.withLockedValue { $0.server } }
    /// Every node on the storage: ``server`` first, then the others in the order they started.
    public var nodes: [RunningServer] { state.withLockedValue { [$0.server] + $0.others } }
    /// The server's base URL, `http://127.0.0.1:PORT`.
    public var baseURL: String { server.baseURL }

    private init(setup: Setup, state: State) {
        self.setup = setup
        self.state = NIOLockedValueBox(state)
    }

    /// Starts `nodes` servers on fresh storage of `engine` and provisions `container`.
    ///
    /// The configuration starts as `ServerConfiguration(port: 0)` on that storage, with an idle
    /// timeout (120 s) longer than the tests' HTTP client keeps an idle connection (60 s), so
    /// the client always drops it first; `configure` changes what a suite needs (clock, sign-in
    /// settings, mail, limits, route extensions, even the storage). Whoever calls this stops
    /// the harness; ``with(_:container:nodes:configure:logger:delivery:_:)`` does it for you.
    /// - Parameters:
    ///   - nodes: how many servers share the storage (more than one on PostgreSQL only), each
    ///     on a port of its own; ``server`` is the first.
    ///   - delivery: what write paths hand committed notifications to, given the server's push
    ///     hub (the hub itself by default).
    public static func start(
        _ engine: Engine = .sqlite, container: String, nodes: Int = 1,
        configure: (inout ServerConfiguration) -> Void = { _ in },
        logger: Logger = Engine.quietLogger, delivery: @escaping @Sendable (PushHub) -> any PushDelivery = { $0 }
    ) async throws -> ServerHarness {
        let id = Engine.freshID()
        let directory = Engine.scratchDirectory(id)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var setup = Setup(engine: engine, directory: directory, container: container, apiToken: "", logger: logger, delivery: delivery)
        var configuration = ServerConfiguration(port: 0)
        configuration.connections.idleTimeout = .seconds(120)
        var started: RunningServer?
        let harness: ServerHarness
        do {
            configuration.storage = try engine.storage(
                id: id, sqliteDirectory: (directory as NSString).appendingPathComponent("server"))
            if TestObjectStore.assetsEverywhere {
                configuration.assets.location = .objectStore(try TestObjectStore.fresh(id))
            }
            configure(&configuration)
            let server = try await setup.startServer(configuration)
            started = server
            configuration.port = server.port
            setup.apiToken = try await server.store.createContainer(container).token
            harness = ServerHarness(setup: setup, state: State(server: server, configuration: configuration))
        } catch {
            try? await started?.stop()
            try? await configuration.storage.removeAll(logger: Engine.quietLogger)
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        do {
            for _ in 1..<max(nodes, 1) { try await harness.startNode() }
        } catch {
            try? await harness.stop()
            throw error
        }
        return harness
    }

    /// Runs `body` against fresh servers (see
    /// ``start(_:container:nodes:configure:logger:delivery:)``), then stops every node and
    /// removes the storage and directory, also when `body` throws.
    public static func with<T>(
        _ engine: Engine = .sqlite, container: String, nodes: Int = 1,
        configure: (inout ServerConfiguration) -> Void = { _ in },
        logger: Logger = Engine.quietLogger, delivery: @escaping @Sendable (PushHub) -> any PushDelivery = { $0 },
        _ body: (ServerHarness) async throws -> T
    ) async throws -> T {
        let harness = try await start(
            engine, container: container, nodes: nodes, configure: configure, logger: logger, delivery: delivery)
        return try await scoped { try await body(harness) } cleanup: { try await harness.stop() }
    }

    /// Starts one more node on the same storage: the server's configuration on an ephemeral
    /// port of its own, changed by `configure` (a node name, a logger's label… never the
    /// storage). The harness stops it with the rest; ``nodes`` lists it.
    @discardableResult
    public func startNode(configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> RunningServer {
        var node = configuration
        node.port = 0
        configure(&node)
        guard node.storage == storage else { throw MovedStorage(harness: storage, asked: node.storage) }
        let started = try await setup.startServer(node)
        state.withLockedValue { $0.others.append(started) }
        return started
    }

    /// Stops the server, keeping its storage and the directory (``restart(configure:)``
    /// starts it again). Stopping a stopped server does nothing.
    public func stopServer() async throws {
        try await server.stop()
    }

    /// Starts the server again on the same storage and port (after ``stopServer()``, or
    /// stopping the running one first), as a restarted process would; `configure` changes
    /// its configuration (an asset location, a clock…, never the storage), and the change
    /// stays for later restarts.
    public func restart(configure: (inout ServerConfiguration) -> Void = { _ in }) async throws {
        var changed = configuration
        configure(&changed)
        guard changed.storage == storage else { throw MovedStorage(harness: storage, asked: changed.storage) }
        try await server.stop()
        let restarted = try await setup.startServer(changed)
        state.withLockedValue {
            $0.server = restarted
            $0.configuration = changed
        }
    }

    /// Stops every node (the others, then the server) and removes the storage and the
    /// directory; each step runs even when one before it failed, and the first failure is
    /// thrown. Stopping twice does nothing more.
    public func stop() async throws {
        var failure: (any Error)?
        for node in nodes.reversed() {
            do { try await node.stop() } catch { failure = failure ?? error }
        }
        let removedBefore = state.withLockedValue { state in
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

/// A node or restart asked for storage other than the harness's: the harness removes only
/// its own, so that would leak the other.
struct MovedStorage: Error, CustomStringConvertible {
    var harness: StorageLocation, asked: StorageLocation
    var description: String {
        "a harness's nodes and restarts run on its storage (\(harness)), not \(asked); start another harness instead"
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
