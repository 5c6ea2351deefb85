import ServiceLifecycle

/// Keeps push connections honest from one task for all of them: pings each device every
/// heartbeat interval and closes the ones that do not answer, closes those whose socket
/// stopped accepting writes, and on shutdown closes them all and ends the web couriers'
/// long polls so the server stops promptly.
struct PushSweeper: Service {
    let hub: PushHub
    let settings: PushSettings

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                let tick = min(settings.sweepInterval, settings.heartbeatInterval / 2)
                while !Task.isCancelled {
                    try await Task.sleep(for: tick)
                    let now = settings.now()
                    for connection in await hub.allConnections() {
                        connection.checkStalled(now: now, timeout: settings.writeTimeout)
                        connection.heartbeat(now: now, interval: settings.heartbeatInterval)
                    }
                }
            }
        } catch is CancellationError {}
        await hub.shutDown()
    }
}
