import Foundation

struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `body`, failing if it takes longer than `timeout` (a guard against hangs, not a
/// way of waiting for events).
func withTimeout<T: Sendable>(
    _ what: String = "the operation", _ timeout: Duration = .seconds(60), _ body: @escaping @Sendable () async throws -> T
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
    private struct Waiter: Sendable {
        var id: Int
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State: Sendable {
        var events: [String] = []
        var waiters: [Waiter] = []
        var nextID = 0
    }

    private let state = Locked(State())

    func append(_ event: String) {
        let ready = state.withLock { state -> [Waiter] in
            state.events.append(event)
            let ready = state.waiters.filter { $0.count <= state.events.count }
            state.waiters.removeAll { $0.count <= state.events.count }
            return ready
        }
        ready.forEach { $0.continuation.resume() }
    }

    var events: [String] { state.withLock { $0.events } }

    /// Waits until at least `count` events were logged; fails after `timeout`.
    func wait(forCount count: Int, timeout: Duration = .seconds(60)) async throws {
        try await withTimeout("\(count) events", timeout) {
            let id = self.state.withLock { state -> Int in
                state.nextID += 1
                return state.nextID
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let ready = self.state.withLock { state -> Bool in
                        if state.events.count >= count || Task.isCancelled { return true }
                        state.waiters.append(Waiter(id: id, count: count, continuation: continuation))
                        return false
                    }
                    if ready { continuation.resume() }
                }
            } onCancel: {
                let waiter = self.state.withLock { state -> Waiter? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index)
                }
                waiter?.continuation.resume()
            }
        }
        let have = events
        if have.count < count { throw TimedOut(what: "\(count) events (have \(have))") }
    }
}

extension AsyncStream where Element: Sendable {
    /// The next element, failing after `timeout`.
    func next(_ what: String, timeout: Duration = .seconds(60)) async throws -> Element {
        try await withTimeout(what, timeout) {
            var iterator = self.makeAsyncIterator()
            guard let element = await iterator.next() else { throw TimedOut(what: "\(what) (stream ended)") }
            return element
        }
    }
}
