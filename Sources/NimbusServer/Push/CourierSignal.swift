import NIOConcurrencyHelpers

/// Wakes one web courier long poll when a notification for its user is committed.
final class CourierSignal: Sendable {
    private struct State {
        var fired = false
        var continuation: CheckedContinuation<Void, Never>?
    }

    private let state = NIOLockedValueBox(State())

    /// Wakes the waiter (now, or as soon as it waits).
    func fire() {
        let continuation = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.fired = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }

    /// Returns when fired, or after `timeout`.
    func wait(timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.waitUntilFired() }
            await group.next()
            group.cancelAll()
            // Releases `waitUntilFired` when the timeout won.
            self.fire()
        }
    }

    private func waitUntilFired() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fired = state.withLockedValue { state -> Bool in
                if state.fired { return true }
                state.continuation = continuation
                return false
            }
            if fired { continuation.resume() }
        }
    }
}
