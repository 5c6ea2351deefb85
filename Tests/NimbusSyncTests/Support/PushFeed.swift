import Nimbus

/// The first element of `stream`, or `nil` after `timeout`.
func first<T: Sendable>(_ stream: AsyncStream<T>, timeout: Duration = .seconds(60)) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            for await element in stream { return element }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        let result = try await group.next() ?? nil
        group.cancelAll()
        return result
    }
}

/// A device's push channel, connected, forwarding notifications.
struct PushFeed {
    let notifications: AsyncStream<PushNotification>
    let pump: Task<Void, Never>

    static func connect(_ container: Container) async throws -> PushFeed {
        let push = PushClient(container: container)
        let (notifications, forward) = AsyncStream<PushNotification>.makeStream()
        let (connected, signalConnected) = AsyncStream<Void>.makeStream()
        let pump = Task {
            for await event in push.events() {
                switch event {
                case .connected: signalConnected.yield()
                case .notification(let notification): forward.yield(notification)
                default: break
                }
            }
            forward.finish()
        }
        for await _ in connected { break }
        return PushFeed(notifications: notifications, pump: pump)
    }

    func stop() { pump.cancel() }
}
