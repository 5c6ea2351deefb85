import Foundation
import Nimbus

/// What the engine's diagnostics keep in memory: the push channel (it lives as long as the
/// engine listens), the throttling met since the last write to the store, and the
/// subscriptions this engine saved. Behind a lock so the retrier's callback and the push
/// task record without hopping onto the actor.
struct DiagnosticsMemory: Sendable {
    var push: SyncDiagnostics.PushConnection?
    var throttling: SyncDiagnostics.Throttling?
    /// ``throttling`` changed since it was last persisted.
    var throttlingChanged = false
    var subscriptionsCreated: Set<SyncDiagnostics.Subscription.Database> = []
    /// Times the push channel connected since the engine began listening.
    var pushConnections = 0

    /// A request is about to be retried after `error`, in `delay`.
    /// `persisted` reads what an earlier run kept, the first time.
    mutating func retrying(
        after error: NimbusError, delay: Duration, at now: Date, persisted: () -> SyncDiagnostics.Throttling?
    ) {
        var throttling = self.throttling ?? persisted() ?? SyncDiagnostics.Throttling()
        if error.code == .requestRateLimited {
            throttling.lastThrottledAt = now
            throttling.lastRetryAfterSeconds = error.retryAfterSeconds
            throttling.throttledCount += 1
        }
        throttling.backoffUntil = now.addingTimeInterval(delay.seconds)
        throttling.backoffError = RecordedError(error)
        self.throttling = throttling
        throttlingChanged = true
    }

    // MARK: - Push

    mutating func pushListening() {
        pushConnections = 0
        push = SyncDiagnostics.PushConnection(
            isConnected: false, since: nil, lastPushAt: nil, pushesReceived: 0, reconnects: 0, lastError: nil,
            nextAttemptAt: nil)
    }

    mutating func pushEvent(_ event: PushEvent, at now: Date) {
        guard var push else { return }
        switch event {
        case .connected:
            pushConnections += 1
            push.reconnects = pushConnections - 1
            push.isConnected = true
            push.since = now
            push.nextAttemptAt = nil
        case .notification:
            push.lastPushAt = now
            push.pushesReceived += 1
        case .disconnected(let error, let retry):
            push.isConnected = false
            push.since = now
            push.lastError = RecordedError(error)
            push.nextAttemptAt = retry.map { now.addingTimeInterval($0.seconds) }
        }
        self.push = push
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
