import Foundation
import Nimbus

extension CKSyncEngine {
    /// Starts the automatic sync: the database subscription, a first fetch and send, the
    /// push listener, and sends scheduled when pending changes are added.
    ///
    /// No wake-up is lost: a fetch or send that fails for a retryable reason (the network,
    /// throttling, a busy server) is scheduled again after the server's `retryAfter` (or a
    /// second), and so is the subscription's save; and each time the push channel connects
    /// again the engine fetches, since pushes sent while it was down are not replayed.
    func startAutomaticSync() {
        state.onChange.withLock { $0 = { [weak self] in self?.scheduleSend(after: nil) } }
        let start = Task { [weak self] in
            // The engine is held only while a request is in flight, never while waiting.
            while let wait = await self?.saveSubscriptionIfNeeded() {
                guard let sleep = self?.sleep, (try? await sleep(wait)) != nil else { return }
            }
            self?.scheduleFetch(after: nil)
            self?.scheduleSend(after: nil)
        }
        let listener = Task { [weak self] in
            guard let events = self?.pushEvents() else { return }
            for await event in events {
                guard let self else { return }
                switch event {
                case .connected: self.scheduleFetch(after: nil)
                case .notification(let push) where self.concerns(push): self.scheduleFetch(after: nil)
                case .notification, .disconnected: break
                }
            }
        }
        background.withLock { $0 += [start, listener] }
    }

    /// The push channel of the engine's user (Nimbus's WebSocket push).
    private func pushEvents() -> AsyncStream<PushEvent>? {
        guard let container = database.nimbus?.container else { return nil }
        return PushClient(container: container).events()
    }

    /// Whether a push is about this engine's database.
    private func concerns(_ push: PushNotification) -> Bool {
        guard let scope = push.databaseScope else { return push.subscriptionID == subscriptionID }
        return CKDatabase.Scope(scope) == database.databaseScope
    }

    /// Saves the database subscription whose pushes drive the fetches (once per state).
    /// - Returns: the wait before trying again after a retryable failure; `nil` when saved,
    ///   not needed, or failed for good.
    private func saveSubscriptionIfNeeded() async -> Duration? {
        guard !state.data.current.subscriptionSaved, database.databaseScope != .public else { return nil }
        let subscription = CKDatabaseSubscription(subscriptionID: subscriptionID)
        let info = CKSubscription.NotificationInfo()
        info.shouldSendContentAvailable = true
        subscription.notificationInfo = info
        do {
            _ = try await database.save(subscription)
        } catch {
            return Task.isCancelled ? nil : Self.retryWait(CKError.wrapping(error))
        }
        state.data.withLock { $0.subscriptionSaved = true }
        await emitStateUpdate()
        return nil
    }

    /// Fetches soon, or after `wait` (the server's retry-after), once however many pushes
    /// arrive meanwhile; a fetch failing for a retryable reason schedules the next.
    func scheduleFetch(after wait: Duration?) {
        guard claim(fetchScheduled) else { return }
        let task = Task { [weak self] in
            if let wait, let sleep = self?.sleep { try? await sleep(wait) }
            guard let self, !Task.isCancelled else { return }
            self.fetchScheduled.withLock { $0 = false }
            let retry = await self.runExclusively {
                try await self.performFetch(reason: .scheduled, options: FetchChangesOptions())
                return nil
            }
            if let retry { self.scheduleFetch(after: retry) }
        }
        remember(task)
    }

    /// Sends after a short wait (so changes added together go together), or after `wait`
    /// (the server's retry-after); a send failing for a retryable reason schedules the next.
    func scheduleSend(after wait: Duration?) {
        guard claim(sendScheduled) else { return }
        let task = Task { [weak self] in
            guard let delay = self?.sendDelay, let sleep = self?.sleep else { return }
            try? await sleep(wait ?? delay)
            guard let self, !Task.isCancelled else { return }
            self.sendScheduled.withLock { $0 = false }
            let retry = await self.runExclusively {
                try await self.performSend(SendChangesContext(reason: .scheduled, options: SendChangesOptions())).retryAfter
            }
            if let retry { self.scheduleSend(after: retry) }
        }
        remember(task)
    }

    /// Sets a "scheduled" flag; `false` when it was set already (the work is coming).
    private func claim(_ flag: Locked<Bool>) -> Bool {
        flag.withLock { scheduled -> Bool in
            defer { scheduled = true }
            return !scheduled
        }
    }

    /// Runs `work` exclusively and returns when to run it again: the wait `work` returns, or
    /// the wait after the retryable error it threw; `nil` when it need not run again.
    private func runExclusively(_ work: @escaping @Sendable () async throws -> Duration?) async -> Duration? {
        let next = Locked<Duration?>(nil)
        do {
            try await exclusively {
                let wait = try await work()
                next.withLock { $0 = wait }
            }
        } catch {
            return Task.isCancelled ? nil : Self.retryWait(CKError.wrapping(error))
        }
        return next.current
    }

    private func remember(_ task: Task<Void, Never>) {
        // The start and the push listener stay first; of the scheduled work, only the latest
        // tasks are kept (the older ones have finished, or will without needing a cancel).
        background.withLock { tasks in
            tasks.append(task)
            if tasks.count > 34 { tasks.remove(at: 2) }
        }
    }
}
