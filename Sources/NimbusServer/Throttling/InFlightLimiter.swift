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
/// takes one lane of the cores, not all of them (docs/THROTTLING.md). With a ``Contention/rest``,
/// such a key that keeps requests waiting also rests between them: its next request starts a
/// share of the last one's running time after it ended, so a flood beside others leaves a
/// core free part of the time, while a key that sends one request at a time never waits.
/// And the requests such a key had waiting start in the ``Lane/background`` lane: the caller
/// runs them at the lowest CPU priority (``BackgroundLane``), so on busy cores the other keys'
/// requests go first.
package final class InFlightLimiter: Sendable {
    /// The lower cap of a key while another key is active.
    package struct Contention: Sendable {
        /// Requests of one key that run at once while another key is active (at least 1).
        package var limit: Int
        /// How recently another key's request must have arrived for this one to count as
        /// sharing the server.
        package var windowMillis: Int64
        /// How long a key with requests waiting rests before its next one starts, as a share of
        /// how long the last one ran (0: no rest; 1: at most about half the time).
        package var rest: Double
        /// The longest rest, in nanoseconds.
        package var maxRestNanos: Int64

        package init(limit: Int, windowMillis: Int64, rest: Double = 0, maxRest: Duration = .milliseconds(20)) {
            self.limit = max(1, limit)
            self.windowMillis = windowMillis
            self.rest = max(0, rest)
            self.maxRestNanos = maxRest.nanoseconds
        }
    }

    /// The monotonic time rests are measured on, and how they are waited: tests inject one
    /// that waits for nothing.
    package struct Pacer: Sendable {
        /// Nanoseconds since some fixed origin.
        package var now: @Sendable () -> Int64
        /// Waits; throws when the task is cancelled.
        package var sleep: @Sendable (Duration) async throws -> Void

        package init(now: @escaping @Sendable () -> Int64, sleep: @escaping @Sendable (Duration) async throws -> Void) {
            self.now = now
            self.sleep = sleep
        }

        package static let system: Pacer = {
            let origin = ContinuousClock.now
            return Pacer(now: { origin.duration(to: .now).nanoseconds }, sleep: { try await Task.sleep(for: $0) })
        }()
    }

    /// Where an admitted request runs.
    package enum Lane: Sendable, Equatable {
        /// As any request: it started at once, or waited while its key was alone.
        case usual
        /// At the lowest priority (``BackgroundLane``): it waited for a place while its key's
        /// cap was lowered beside another key's requests, so its key sends more at once than
        /// it may run beside others — a flood.
        case background
    }

    /// How a waiting request starts: after a rest, in a lane.
    private struct Start: Sendable {
        var rest: Duration = .zero
        var lane = Lane.usual
    }

    private struct Waiter {
        var id: Int
        /// Resumed with how to start.
        var continuation: CheckedContinuation<Start, any Error>
    }

    private struct Entry {
        var running = 0
        var waiting: [Waiter] = []
        /// The cap the key's requests asked for.
        var limit = 0
        /// When its latest request started (``Pacer`` nanoseconds), for its rest.
        var lastStart: Int64 = 0
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
    private let pacer: Pacer
    /// Whether starts are timed at all (a contention with a rest).
    private let paces: Bool

    /// - Parameters:
    ///   - contention: the lower cap of a key that shares the server with others (`nil`: none).
    ///   - clock: what the contention window is measured with.
    ///   - pacer: what rests are measured and waited with.
    package init(contention: Contention? = nil, clock: WallClock = .system, pacer: Pacer = .system) {
        self.contention = contention
        self.clock = clock
        self.pacer = pacer
        self.paces = (contention?.rest ?? 0) > 0
    }

    /// Waits for one of `key`'s `limit` places (`limit` 0: no cap), and tells in which lane the
    /// request should run. THROTTLED when `maxWaiting` requests of the key already wait;
    /// CancellationError when the task is cancelled while waiting. Every successful acquire
    /// needs one ``release(_:)``.
    @discardableResult
    package func acquire(_ key: String, limit: Int, maxWaiting: Int, what: String) async throws -> Lane {
        guard limit > 0 else { return .usual }
        enum Decision { case run, wait(Int), refuse }
        let now = contention == nil ? 0 : clock.nowMillis()
        let started = paces ? pacer.now() : 0
        let contention = contention
        let decision: Decision = state.withLockedValue { state in
            state.arrived(key, at: now)
            let cap = state.limit(of: key, limit, contention: contention, now: now)
            var entry = state.entries[key, default: Entry()]
            entry.limit = limit
            if entry.running < cap {
                entry.running += 1
                entry.lastStart = started
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
        case .run: return .usual
        case .refuse:
            throw CloudKitError(
                .throttled,
                "\(what) has \(limit) requests running and \(maxWaiting) waiting, the most this server takes; "
                    + "send fewer requests at once and retry after 1 s", retryAfter: 1)
        case .wait(let id):
            let start = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Start, any Error>) in
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
                            entry.lastStart = started
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
                    case .running: continuation.resume(returning: Start())
                    case .waiting: break
                    }
                }
            } onCancel: {
                let continuation: CheckedContinuation<Start, any Error>? = self.state.withLockedValue { state in
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
            guard start.rest > .zero else { return start.lane }
            do {
                try await pacer.sleep(start.rest)
            } catch {
                release(key)
                throw error
            }
            return start.lane
        }
    }

    /// Gives `key`'s place to the next waiting request, or frees it; with the key's cap
    /// higher again (no other key active any more), lets more of its waiting requests run.
    package func release(_ key: String) {
        let now = contention == nil ? 0 : clock.nowMillis()
        let ended = paces ? pacer.now() : 0
        let contention = contention
        let next: (continuations: [CheckedContinuation<Start, any Error>], start: Start) = state.withLockedValue { state in
            guard var entry = state.entries[key] else { return ([], Start()) }
            entry.running -= 1
            let cap = state.limit(of: key, entry.limit, contention: contention, now: now)
            // Beside others (its cap lowered) with more waiting: rest a share of the last run.
            var rest: Int64 = 0
            if let contention, contention.rest > 0, cap < entry.limit, !entry.waiting.isEmpty {
                let ran = max(0, ended - entry.lastStart)
                rest = min(Int64(Double(ran) * contention.rest), contention.maxRestNanos)
            }
            var resumed: [CheckedContinuation<Start, any Error>] = []
            while entry.running < cap, !entry.waiting.isEmpty {
                let waiter = entry.waiting.removeFirst()
                state.unresumed.remove(waiter.id)
                entry.running += 1
                entry.lastStart = ended + rest
                resumed.append(waiter.continuation)
            }
            state.entries[key] = entry.running > 0 || !entry.waiting.isEmpty ? entry : nil
            // Its cap lowered beside others: the requests it let wait run in the background.
            let lane: Lane = contention != nil && cap < entry.limit ? .background : .usual
            return (resumed, Start(rest: .nanoseconds(rest), lane: lane))
        }
        for continuation in next.continuations { continuation.resume(returning: next.start) }
    }

    /// Requests running and waiting under `key`.
    package func load(_ key: String) -> (running: Int, waiting: Int) {
        state.withLockedValue { ($0.entries[key]?.running ?? 0, $0.entries[key]?.waiting.count ?? 0) }
    }
}
