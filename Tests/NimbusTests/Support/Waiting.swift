import Foundation

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body`, failing if it takes longer than `timeout` (a guard against hangs, not a
/// way of waiting for events).
func withTimeout<T: Sendable>(
    _ what: String = "the operation", _ timeout: Duration = .seconds(20), _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw TimedOut(what: what)
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
    }
}

/// An ordered log of events from any thread, which a test can await.
final class EventLog: Sendable {
    private struct State: Sendable {
        var events: [String] = []
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    func append(_ event: String) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.events.append(event)
            let ready = state.waiters.filter { $0.count <= state.events.count }.map(\.continuation)
            state.waiters.removeAll { $0.count <= state.events.count }
            return ready
        }
        ready.forEach { $0.resume() }
    }

    var events: [String] { state.withLock { $0.events } }

    /// Waits until at least `count` events were logged.
    func wait(forCount count: Int, timeout: Duration = .seconds(20)) async throws {
        try await withTimeout("\(count) events (have \(events))", timeout) {
            await withCheckedContinuation { continuation in
                let ready = self.state.withLock { state -> Bool in
                    if state.events.count >= count { return true }
                    state.waiters.append((count, continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }
}
