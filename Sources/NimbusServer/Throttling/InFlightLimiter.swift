import NIOConcurrencyHelpers
import NimbusProtocol
import NimbusStore

/// Caps the requests of one key (a user, an address) the server works on at once: the rest
/// wait their turn in order, up to `maxWaiting` of them; one more is refused with THROTTLED.
///
/// A client within its rate can still send many requests at once and keep every core busy;
/// with this cap it has at most `limit` of them running, and another client's request waits
/// for at most those. Waiting requests hold nothing but their connection. Memory: an entry
/// per key with requests running or waiting, no more.
///
/// With a ``Contention`` cap, a key whose requests share the server with another key's (one
/// running or waiting now, or one that arrived within the contention window) runs at most
/// that many: a user alone keeps the full cap for parallel work, and a user beside others
/// takes one lane of the cores, not all of them (docs/THROTTLING.md).
package final class InFlightLimiter: Sendable {
    /// The lower cap of a key while another key is active.
    package struct Contention: Sendable {
        /// Requests of one key that run at once while another key is active (at least 1).
        package var limit: Int
        /// How recently another key's request must have arrived for this one to count as
        /// sharing the server.
        package var windowMillis: Int64

        package init(limit: Int, windowMillis: Int64) {
            self.limit = max(1, limit)
            self.windowMillis = windowMillis
        }
    }

    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Entry {
        var running = 0
        var waiting: [Waiter] = []
        /// The cap the key's requests asked for.
        var limit = 0
    }

    private enum Enqueued { case cancelled, running, waiting }

    private struct State {
        var entries: [String: Entry] = [:]
        var nextID = 0
        /// Waiters told to wait and not yet resumed.
        var unresumed: Set<Int> = []
        /// Waiters cancelled before they were queued (the cancellation handler ran first).
        var cancelledEarly: Set<Int> = []
        /// The two keys whose requests arrived last, and when, newest first.
        var recent: [(key: String, at: Int64)] = []

        /// Notes that a request of `key` arrived at `now`.
        mutating func arrived(_ key: String, at now: Int64) {
            if recent.first?.key == key {
                recent[0].at = now
            } else {
                recent.insert((key, now), at: 0)
                if recent.count > 2 { recent.removeLast() }
            }
        }

        /// `key`'s cap now: `limit`, or the contention cap while another key is active.
        func limit(of key: String, _ limit: Int, contention: Contention?, now: Int64) -> Int {
            guard let contention, limit > contention.limit else { return limit }
            let othersActive = entries.count > (entries[key] == nil ? 0 : 1)
            let otherArrivedLately = recent.contains { $0.key != key && now - $0.at < contention.windowMillis }
            return othersActive || otherArrivedLately ? contention.limit : limit
        }
    }

    private let state = NIOLockedValueBox(State())
    private let contention: Contention?
    private let clock: WallClock

    /// - Parameters:
    ///   - contention: the lower cap of a key that shares the server with others (`nil`: none).
    ///   - clock: what the contention window is measured with.
    package init(contention: Contention? = nil, clock: WallClock = .system) {
        self.contention = contention
        self.clock = clock
    }

    /// Waits for one of `key`'s `limit` places (`limit` 0: no cap). THROTTLED when
    /// `maxWaiting` requests of the key already wait; CancellationError when the task is
    /// cancelled while waiting. Every successful acquire needs one ``release(_:)``.
    package func acquire(_ key: String, limit: Int, maxWaiting: Int, what: String) async throws {
        guard limit > 0 else { return }
        enum Decision { case run, wait(Int), refuse }
        let now = contention == nil ? 0 : clock.nowMillis()
        let contention = contention
        let decision: Decision = state.withLockedValue { state in
            state.arrived(key, at: now)
            let cap = state.limit(of: key, limit, contention: contention, now: now)
            var entry = state.entries[key, default: Entry()]
            entry.limit = limit
            if entry.running < cap {
                entry.running += 1
                state.entries[key] = entry
                return .run
            }
            guard entry.waiting.count < maxWaiting else { return .refuse }
            state.entries[key] = entry
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
                        let cap = state.limit(of: key, limit, contention: contention, now: now)
                        var entry = state.entries[key, default: Entry(limit: limit)]
                        if entry.running < cap {
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

    /// Gives `key`'s place to the next waiting request, or frees it; with the key's cap
    /// higher again (no other key active any more), lets more of its waiting requests run.
    package func release(_ key: String) {
        let now = contention == nil ? 0 : clock.nowMillis()
        let next: [CheckedContinuation<Void, any Error>] = state.withLockedValue { state in
            guard var entry = state.entries[key] else { return [] }
            entry.running -= 1
            let cap = state.limit(of: key, entry.limit, contention: contention, now: now)
            var resumed: [CheckedContinuation<Void, any Error>] = []
            while entry.running < cap, !entry.waiting.isEmpty {
                let waiter = entry.waiting.removeFirst()
                state.unresumed.remove(waiter.id)
                entry.running += 1
                resumed.append(waiter.continuation)
            }
            state.entries[key] = entry.running > 0 || !entry.waiting.isEmpty ? entry : nil
            return resumed
        }
        for continuation in next { continuation.resume() }
    }

    /// Requests running and waiting under `key`.
    package func load(_ key: String) -> (running: Int, waiting: Int) {
        state.withLockedValue { ($0.entries[key]?.running ?? 0, $0.entries[key]?.waiting.count ?? 0) }
    }
}
