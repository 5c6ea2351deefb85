import Logging
import NimbusStore
import ServiceLifecycle

/// Delivers to this node's devices the notifications committed through other nodes that
/// share the storage (PostgreSQL LISTEN/NOTIFY), so a device connected anywhere hears a save
/// made anywhere. On a single-node engine there is nothing to relay and it only waits for
/// shutdown.
struct RemoteNotificationRelay: Service {
    let store: any NimbusStorage
    let hub: PushHub
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                for await batch in store.remoteNotifications() {
                    await hub.deliver(batch)
                }
                // Single node (or storage closing): stay up until the server stops, since a
                // service that returns early would stop the whole group.
                try await gracefulShutdown()
            }
        } catch is CancellationError {}
    }
}
