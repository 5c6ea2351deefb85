import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One OS thread that runs jobs in order at the lowest CPU priority the system gives without
/// privileges (nice 19 on Linux), for writes nobody waits for: the trace file's.
///
/// A job that writes through GRDB's synchronous API runs on this thread (a serial dispatch
/// queue's `sync` runs its block on the calling thread), so SQLite's work, its commit and its
/// checkpoints all run at this priority. On 2 cores, a journal write that ran beside a request
/// at the same priority delayed it (the traced single-record p99: docs/PERFORMANCE.md,
/// "Tracing overhead"); at nice 19 the scheduler lets a woken request thread go first.
///
/// A dedicated thread, not a dispatch queue: a nice value belongs to a thread, and one of
/// libdispatch's shared workers, once lowered, could not be raised again without privileges.
final class LowPriorityThread: @unchecked Sendable {
    // @unchecked: `jobs` and `stopped` are only read or written while `condition` is locked.
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var stopped = false

    /// Starts the thread; it lives until ``stop()`` (the thread holds this object, so dropping
    /// it does not end the thread: its owner stops it when it closes or goes away).
    init(name: String) {
        let thread = Thread { [self] in loop() }
        thread.name = name
        #if !os(Linux)
        thread.qualityOfService = .background
        #endif
        thread.start()
    }

    /// Runs `body` on the thread after the jobs before it, and returns what it returned.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job: @Sendable () -> Void = { continuation.resume(with: Result { try body() }) }
            condition.lock()
            defer { condition.unlock() }
            guard !stopped else {
                continuation.resume(throwing: CancellationError())
                return
            }
            jobs.append(job)
            condition.signal()
        }
    }

    /// Lets the thread finish the jobs already queued, then end; later jobs are refused.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        #if os(Linux)
        // PRIO_PROCESS with 0 is the calling thread on Linux (a nice value is per thread there).
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        #endif
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll()
            condition.unlock()
            for job in batch { job() }
        }
    }
}
