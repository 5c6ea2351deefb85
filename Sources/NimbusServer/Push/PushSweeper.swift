import ServiceLifecycle

/// Closes push connections whose socket stopped accepting writes, and on shutdown ends the
/// web couriers' long polls so the server stops promptly.
struct PushSweeper: Service {
    let hub: PushHub
    let settings: PushSettings

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    try await Task.sleep(for: settings.sweepInterval)
                    let now = ContinuousClock.now
                    for connection in await hub.allConnections() {
                        connection.checkStalled(now: now, timeout: settings.writeTimeout)
                    }
                }
            }
        } catch is CancellationError {}
        await hub.shutDown()
    }
}
