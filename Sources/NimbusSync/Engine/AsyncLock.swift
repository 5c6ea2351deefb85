/// A FIFO lock for async work inside an actor: one holder at a time, across suspension
/// points (which actor isolation alone does not give).
struct AsyncLock {
    private var held = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Returns true if the caller got the lock at once; otherwise call ``enqueue(_:)``.
    mutating func tryAcquire() -> Bool {
        if held { return false }
        held = true
        return true
    }

    mutating func enqueue(_ continuation: CheckedContinuation<Void, Never>) {
        waiters.append(continuation)
    }

    /// Hands the lock to the next waiter, or frees it.
    mutating func release() {
        if waiters.isEmpty {
            held = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
