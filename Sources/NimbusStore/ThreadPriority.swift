#if canImport(Glibc)
import Glibc
#endif

/// Lowers the CPU priority of the calling thread, for threads that do work nobody waits for
/// (``LowPriorityThread``) or work that should wait while others need the cores (the server's
/// background lane).
package enum ThreadPriority: Sendable {
    /// Nice 19: the thread still gets a small share of busy cores (about 1.5 % beside a thread
    /// at nice 0).
    case lowest
    /// Nice 19 and `SCHED_IDLE` on Linux: the scheduler preempts the thread as soon as
    /// any other wakes on its core, and counts a core that runs only it as idle when it places
    /// a woken thread.
    case idle

    #if os(Linux)
    /// Linux's `SCHED_IDLE` policy (Glibc's module does not export the macro).
    package static let schedIdle: Int32 = 5
    #endif

    /// Applies this priority to the calling thread (on Linux; elsewhere the thread's quality of
    /// service, set before it starts, stands for it). Neither needs privileges; a refusal
    /// leaves the thread as it was.
    package func applyToCurrentThread() {
        #if os(Linux)
        // PRIO_PROCESS with 0 is the calling thread on Linux (a nice value is per thread there).
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        if self == .idle {
            var parameters = sched_param()
            parameters.sched_priority = 0
            _ = sched_setscheduler(0, Self.schedIdle, &parameters)
        }
        #endif
    }
}
