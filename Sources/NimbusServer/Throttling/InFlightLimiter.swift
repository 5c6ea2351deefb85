import NIOConcurrencyHelpers
import NimbusProtocol

/// Caps the requests of one key (a user, an address) the server works on at once: the rest
/// wait their turn in order, up to `maxWaiting` of them; one more is refused with THROTTLED.
///
/// A client within its rate can still send many requests at once and keep every core busy;
/// with this cap it has at most `limit` of them running, and another client's request waits
/// for at most those. Waiting requests hold nothing but their connection. Memory: an entry
/// per key with requests running or waiting, no more.
package final class InFlightLimiter: Sendable {
    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Entry {
        var running = 0
        var waiting: [Waiter] = []
    }

    private enum Enqueued { case cancelled, running, waiting }

    private struct State {
        var entries: [String: Entry] = [:]
        var nextID = 0
        /// Waiters told to wait and not yet resumed.
        var unresumed: Set<Int> = []
        /// Waiters cancelled before they were queued (the cancellation handler ran first).
        var cancelledEarly: Set<Int> = []
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    /// Waits for one of `key`'s `limit` places (`limit` 0: no cap). THROTTLED when
    /// `maxWaiting` requests of the key already wait; CancellationError when the task is
    /// cancelled while waiting. Every successful acquire needs one ``release(_:)``.
    package func acquire(_ key: String, limit: Int, maxWaiting: Int, what: String) async throws {
        guard limit > 0 else { return }
        enum Decision { case run, wait(Int), refuse }
        let decision: Decision = state.withLockedValue { state in
            var entry = state.entries[key, default: Entry()]
            if entry.running < limit {
                entry.running += 1
                state.entries[key] = entry
                return .run
            }
            guard entry.waiting.count < maxWaiting else { return .refuse }
            state.nextID += 1
            state.unresumed.insert(state.nextID)
            return .wait(state.nextID)
        }
        switch decision {
        case .run: return
        case .refuse:
            throw CloudKitError(
                .throttled,
                "\(what) has \(limit) requests running and \(maxWaiting) waiting, the most this server takes; "
                    + "send fewer requests at once and retry after 1 s", retryAfter: 1)
        case .wait(let id):
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    // Decided again under the lock: a place freed since the first look is taken now.
                    let outcome: Enqueued = self.state.withLockedValue { state in
                        if state.cancelledEarly.remove(id) != nil {
                            state.unresumed.remove(id)
                            return .cancelled
                        }
                        var entry = state.entries[key, default: Entry()]
                        if entry.running < limit {
                            entry.running += 1
                            state.entries[key] = entry
                            state.unresumed.remove(id)
                            return .running
                        }
                        entry.waiting.append(Waiter(id: id, continuation: continuation))
                        state.entries[key] = entry
                        return .waiting
                    }
                    switch outcome {
                    case .cancelled: continuation.resume(throwing: CancellationError())
                    case .running: continuation.resume()
                    case .waiting: break
                    }
                }
            } onCancel: {
                let continuation: CheckedContinuation<Void, any Error>? = self.state.withLockedValue { state in
                    guard state.unresumed.contains(id) else { return nil }  // already given its place
                    guard var entry = state.entries[key], let index = entry.waiting.firstIndex(where: { $0.id == id })
                    else {
                        state.cancelledEarly.insert(id)  // not queued yet: the queueing sees it
                        return nil
                    }
                    let waiter = entry.waiting.remove(at: index)
                    state.unresumed.remove(id)
                    state.entries[key] = entry
                    return waiter.continuation
                }
                continuation?.resume(throwing: CancellationError())
            }
        }
    }

    /// Gives `key`'s place to the next waiting request, or frees it.
    package func release(_ key: String) {
        let next: CheckedContinuation<Void, any Error>? = state.withLockedValue { state in
            guard var entry = state.entries[key] else { return nil }
            if entry.waiting.isEmpty {
                entry.running -= 1
                state.entries[key] = entry.running > 0 ? entry : nil
                return nil
            }
            let waiter = entry.waiting.removeFirst()
            state.unresumed.remove(waiter.id)
            state.entries[key] = entry
            return waiter.continuation
        }
        next?.resume()
    }

    /// Requests running and waiting under `key`.
    package func load(_ key: String) -> (running: Int, waiting: Int) {
        state.withLockedValue { ($0.entries[key]?.running ?? 0, $0.entries[key]?.waiting.count ?? 0) }
    }
}
