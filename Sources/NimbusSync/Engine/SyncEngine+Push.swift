import Foundation
import NIOConcurrencyHelpers
import Nimbus

extension SyncEngine {
    /// Listens to a push channel: every push, and every (re)connection (pushes sent while the
    /// channel was down are not replayed), makes the engine fetch, coalesced; the channel's
    /// state is kept for ``diagnostics(pendingLimit:)`` (``SyncDiagnostics/push``) and
    /// reported as ``SyncEvent/pushConnectionChanged(_:)``. Until ``stopListening()``.
    ///
    /// ```swift
    /// await engine.listen(to: PushClient(container: container))
    /// let push = try await engine.diagnostics().push   // connected? since when? last push?
    /// ```
    public func listen(to push: PushClient) {
        pushTask?.cancel()
        memory.withLockedValue { $0.pushListening() }
        let events = push.events()
        pushTask = Task {
            for await event in events {
                if Task.isCancelled { break }
                let now = self.clock.now()
                let state = self.memory.withLockedValue { memory in
                    memory.pushEvent(event, at: now)
                    return memory.push
                }
                switch event {
                case .connected: self.triggerFetch()
                case .notification(let notification): self.triggerFetch(trace: notification.trace)
                case .disconnected: break
                }
                if case .notification = event { continue }
                if let state { self.emit(.pushConnectionChanged(state)) }
            }
        }
    }
}
