import Foundation
import NIOConcurrencyHelpers
import Nimbus
import NimbusSync

/// Connects a device's push channel to its sync engine: every push makes the engine fetch
/// (coalesced), and so does every reconnection after the first, since pushes sent while
/// the channel was down may be missed.
///
/// ```swift
/// let feed = PushFeed.start(client: device.pushClient(), engine: device.engine)
/// try await feed.waitUntilConnected()
/// try await device.readingList.sync()
/// …
/// await feed.stop()                       // offline: no more pushes, no fetches
/// ```
public final class PushFeed: Sendable {
    private let engine: SyncEngine
    private let state = NIOLockedValueBox(State())
    private let task: Task<Void, Never>

    private struct State {
        var connections = 0
        var pushes = 0
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }

    /// Starts listening. `onEvent` sees every push channel event (for a status line).
    public static func start(
        client: PushClient, engine: SyncEngine, onEvent: @escaping @Sendable (PushEvent) -> Void = { _ in }
    ) async -> PushFeed {
        // Pushes that arrive while the engine fetches collapse into one follow-up fetch.
        let (notifications, continuation) = AsyncStream<PushNotification>.makeStream(
            bufferingPolicy: .bufferingNewest(1))
        await engine.listen(to: notifications)
        return PushFeed(client: client, engine: engine, continuation: continuation, onEvent: onEvent)
    }

    private init(
        client: PushClient, engine: SyncEngine, continuation: AsyncStream<PushNotification>.Continuation,
        onEvent: @escaping @Sendable (PushEvent) -> Void
    ) {
        self.engine = engine
        let state = self.state
        task = Task {
            for await event in client.events() {
                switch event {
                case .connected:
                    let (count, waiters) = state.withLockedValue { state in
                        state.connections += 1
                        defer { state.waiters = [:] }
                        return (state.connections, state.waiters)
                    }
                    waiters.values.forEach { $0.resume() }
                    if count > 1 { Task { try? await engine.fetchChanges() } }
                case .notification(let notification):
                    state.withLockedValue { $0.pushes += 1 }
                    continuation.yield(notification)
                case .disconnected:
                    break
                }
                onEvent(event)
            }
            continuation.finish()
        }
    }

    /// How many pushes arrived.
    public var pushesReceived: Int { state.withLockedValue { $0.pushes } }
    /// How many times the channel connected.
    public var connections: Int { state.withLockedValue { $0.connections } }

    /// Returns once the channel has connected (at once if it did before).
    public func waitUntilConnected(timeout: Duration = .seconds(10)) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                let id = UUID()
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let ready = self.state.withLockedValue { state -> Bool in
                            if state.connections > 0 || Task.isCancelled { return true }
                            state.waiters[id] = continuation
                            return false
                        }
                        if ready { continuation.resume() }
                    }
                } onCancel: {
                    self.state.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw ReadingListError.timedOut("the push channel to connect")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Disconnects: the engine stops fetching on pushes.
    public func stop() async {
        task.cancel()
        await engine.stopListening()
        let waiters = state.withLockedValue { state in
            defer { state.waiters = [:] }
            return state.waiters
        }
        waiters.values.forEach { $0.resume() }
    }
}
