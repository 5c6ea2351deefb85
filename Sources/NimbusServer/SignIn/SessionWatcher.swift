import Logging
import NimbusStore
import ServiceLifecycle

/// Closes the push connections whose session ended where this node could not see it: revoked
/// with `nimbus session revoke` (another process) or through another node, or expired.
/// Revocations made through this node's API close their connections at once instead.
struct SessionWatcher: Service {
    let hub: PushHub
    let sessions: any SessionStore
    let policy: SessionPolicy
    let interval: Duration
    let clock: WallClock
    let logger: Logger

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                await check()
            }
        }
    }

    /// One pass: closes the connections of every connected session that is no longer live.
    func check() async {
        let connected = await hub.connectedSessionIDs()
        guard !connected.isEmpty else { return }
        do {
            let live = try await sessions.liveSessionIDs(
                Array(connected), seenSince: policy.liveSince(now: clock.nowMillis()))
            await hub.closeConnections(ofSessions: connected.subtracting(live))
        } catch {
            logger.warning("checking push connections' sessions failed: \(error)")
        }
    }
}
