import Logging
import NimbusServer
import NimbusStore

extension RunningServer {
    /// Opens the storage ``ServerConfiguration/storage`` names with the engines Nimbus ships
    /// (embedded SQLite, PostgreSQL) and starts serving on it; returns once the port is bound.
    ///
    /// ```swift
    /// import NimbusEngines
    /// import NimbusServer
    ///
    /// let server = try await RunningServer.start(ServerConfiguration(port: 0, dataDirectory: dir))
    /// print(server.baseURL)          // http://127.0.0.1:54321
    /// try await server.stop()        // in-flight requests finish, the database closes
    /// ```
    /// - Parameters:
    ///   - handleSignals: shut down gracefully on SIGINT and SIGTERM (`nimbus serve`).
    ///   - delivery: what write paths hand committed notifications to, given the server's push
    ///     hub (by default the hub itself); tests wrap the hub to record what is sent.
    public static func start(
        _ configuration: ServerConfiguration, handleSignals: Bool = false,
        logger: Logger = Logger(label: "nimbus"),
        delivery: @Sendable (PushHub) -> any PushDelivery = { $0 }
    ) async throws -> RunningServer {
        let store = try await configuration.storage.open(logger: logger, clock: configuration.clock)
        let assetBytes: any AssetStore
        do {
            // An object store checks signatures against the real time, not the server's clock
            // (which tests may set to another day): signing uses the system clock.
            let primary = try configuration.storage.openAssets(for: store, at: configuration.assets.location)
            if let previous = configuration.assets.previousLocation {
                assetBytes = FallbackAssetStore(
                    primary: primary, previous: try configuration.storage.openAssets(for: store, at: previous))
            } else {
                assetBytes = primary
            }
        } catch {
            try? await store.shutdown()
            throw error
        }
        return try await start(
            configuration, store: store, assetBytes: assetBytes, handleSignals: handleSignals, logger: logger,
            delivery: delivery)
    }
}
