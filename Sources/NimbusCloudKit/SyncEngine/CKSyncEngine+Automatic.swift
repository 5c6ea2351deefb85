import Foundation
import Nimbus

extension CKSyncEngine {
    /// Starts the automatic sync: the database subscription, a first fetch and send, the
    /// push listener, and sends scheduled when pending changes are added.
    func startAutomaticSync() {
        state.onChange.withLock { $0 = { [weak self] in self?.scheduleSend(after: nil) } }
        let start = Task { [weak self] in
            guard let self else { return }
            await self.saveSubscriptionIfNeeded()
            self.scheduleFetch()
            self.scheduleSend(after: nil)
        }
        let listener = Task { [weak self] in
            guard let pushes = self?.pushes() else { return }
            for await push in pushes {
                guard let self else { return }
                if self.concerns(push) { self.scheduleFetch() }
            }
        }
        background.withLock { $0 += [start, listener] }
    }

    /// The pushes of the engine's user, from Nimbus's WebSocket push channel.
    private func pushes() -> AsyncStream<PushNotification>? {
        guard let container = database.nimbus?.container else { return nil }
        return PushClient(container: container).notifications()
    }

    /// Whether a push is about this engine's database.
    private func concerns(_ push: PushNotification) -> Bool {
        guard let scope = push.databaseScope else { return push.subscriptionID == subscriptionID }
        return CKDatabase.Scope(scope) == database.databaseScope
    }

    /// Saves the database subscription whose pushes drive the fetches (once per state).
    private func saveSubscriptionIfNeeded() async {
        guard !state.data.current.subscriptionSaved, database.databaseScope != .public else { return }
        let subscription = CKDatabaseSubscription(subscriptionID: subscriptionID)
        let info = CKSubscription.NotificationInfo()
        info.shouldSendContentAvailable = true
        subscription.notificationInfo = info
        guard (try? await database.save(subscription)) != nil else { return }
        state.data.withLock { $0.subscriptionSaved = true }
        await emitStateUpdate()
    }

    /// Fetches soon (once, however many pushes arrive meanwhile).
    func scheduleFetch() {
        let first = fetchScheduled.withLock { scheduled -> Bool in
            defer { scheduled = true }
            return !scheduled
        }
        guard first else { return }
        let task = Task { [weak self] in
            guard let self else { return }
            self.fetchScheduled.withLock { $0 = false }
            let context = FetchChangesContext(reason: .scheduled, options: FetchChangesOptions())
            try? await self.exclusively {
                let options = await self.delegate?.nextFetchChangesOptions(context, syncEngine: self) ?? context.options
                try await self.performFetch(FetchChangesContext(reason: .scheduled, options: options))
            }
        }
        remember(task)
    }

    /// Sends after a short wait (so changes added together go together), or after `wait`
    /// (the server's retry-after); a send failing for a retryable reason schedules the next.
    func scheduleSend(after wait: Duration?) {
        let first = sendScheduled.withLock { scheduled -> Bool in
            defer { scheduled = true }
            return !scheduled
        }
        guard first else { return }
        let task = Task { [weak self] in
            guard let delay = self?.sendDelay else { return }
            try? await self?.sleep(wait ?? delay)
            guard let self, !Task.isCancelled else { return }
            self.sendScheduled.withLock { $0 = false }
            let retry = Locked<Duration?>(nil)
            try? await self.exclusively {
                let outcome = try await self.performSend(SendChangesContext(reason: .scheduled, options: SendChangesOptions()))
                retry.withLock { $0 = outcome.retryAfter }
            }
            if let next = retry.current { self.scheduleSend(after: next) }
        }
        remember(task)
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
