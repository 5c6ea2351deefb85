import Foundation
import NimbusStore

/// One OS thread that runs jobs in order at a low CPU priority (nice 19 on Linux, and for
/// ``ThreadPriority/idle`` the `SCHED_IDLE` policy too), for writes nobody waits for: the trace
/// file's, and the WAL checkpoints.
///
/// A job that writes through GRDB's synchronous API runs on this thread (a serial dispatch
/// queue's `sync` runs its block on the calling thread), so SQLite's work, its commit and its
/// checkpoints all run at this priority. On 2 cores, a journal write that ran beside a request
/// at the same priority delayed it (docs/PERFORMANCE.md, "Tracing overhead"); at this
/// priority the scheduler lets a woken request thread go first.
///
/// A dedicated thread, not a dispatch queue: a nice value belongs to a thread, and one of
/// libdispatch's shared workers, once lowered, could not be raised again without privileges.
final class LowPriorityThread: @unchecked Sendable {
    // @unchecked: every stored property but the constants `condition` and `priority` is only
    // read or written while `condition` is locked.
    private struct Job {
        var run: () -> Void
        var cancel: () -> Void
    }

    /// How little of the cores the thread asks for: ``ThreadPriority/lowest`` (nice 19) for
    /// work that must not fall far behind, the WAL checkpoints, which the store's commits
    /// would otherwise do themselves; ``ThreadPriority/idle`` (`SCHED_IDLE`) for work that may
    /// wait while the cores are busy, the trace file (at nice 19 alone, a woken request could
    /// wait for the rest of the writer's slice: the traced requests' p99, docs/PERFORMANCE.md,
    /// "Tracing overhead").
    private let priority: ThreadPriority

    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var stopped = false
    private var running = false
    private var thread: Thread?

    /// Starts the thread; it lives until ``stop()`` (the thread holds this object, so dropping
    /// it does not end the thread: its owner stops it when it closes or goes away).
    init(name: String, priority: ThreadPriority) {
        self.priority = priority
        let thread = Thread { [self] in loop() }
        thread.name = name
        #if !os(Linux)
        thread.qualityOfService = .background
        #endif
        self.thread = thread
        thread.start()
    }

    /// Runs `body` on the thread after the jobs before it, and returns what it returned.
    /// Throws `CancellationError` if the thread is stopped before the job starts.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let job = Job(
                run: { continuation.resume(with: Result { try body() }) },
                cancel: { continuation.resume(throwing: CancellationError()) })
            condition.lock()
            guard !stopped else {
                condition.unlock()
                job.cancel()
                return
            }
            jobs.append(job)
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Ends the thread: jobs not started yet are cancelled, later ones refused, and a job
    /// under way finishes before this returns (so the owner may close what jobs use). Called
    /// from a job on the thread itself, it does not wait.
    func stop() {
        condition.lock()
        stopped = true
        let cancelled = jobs
        jobs.removeAll()
        condition.broadcast()
        condition.unlock()
        // Their callers learn at once, not after the running job.
        for job in cancelled { job.cancel() }
        condition.lock()
        let onThread = thread.map { $0 == Thread.current } ?? false
        while running && !onThread { condition.wait() }
        condition.unlock()
    }

    private func loop() {
        priority.applyToCurrentThread()
        condition.lock()
        while true {
            while jobs.isEmpty && !stopped { condition.wait() }
            if stopped {
                thread = nil
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            running = true
            condition.unlock()
            job.run()
            condition.lock()
            running = false
            condition.broadcast()
        }
    }
}
