import Foundation
import NIOCore
import NimbusStore

/// A task executor on a few OS threads under Linux's `SCHED_IDLE` policy (the utility quality
/// of service on Apple platforms): where the requests of a user who floods the server beside
/// other users run (see ``InFlightLimiter``), so that whenever another user's request wants a
/// core, the scheduler gives it one at once, and the flood takes what is left.
///
/// The throttle's lane and rest bound the flood's share of the server; this decides who goes
/// first when both want a core at once. Without it, a quiet user's request that arrived while
/// a 40-record flood request was being parsed waited for it: at the same priority, a woken
/// thread may wait for the rest of a busy thread's slice (docs/PERFORMANCE.md, "Fairness under
/// a flood").
///
/// What runs here is the request's own work: reading and parsing its body, checking and
/// planning its records, rendering the answer. The store's writes still run on its writer at
/// the usual priority, so a flood's transaction never holds SQLite's one writer on a thread
/// the scheduler puts off. Shared state the requests touch is held briefly (locks, and actors
/// that do no heavy work inside: ``SchemaRegistry`` checks records outside its isolation). And
/// should a lane thread be put off while it holds one, the threads that wait for it sleep,
/// which frees a core for it: the wait lasts as long as the cores are busy with work that
/// does not need what it holds.
///
/// One lane per process, as many threads as cores, started on first use.
package final class BackgroundLane: @unchecked Sendable {
    // @unchecked: `jobs` is only read or written while `condition` is locked; the rest are
    // constants.
    private let condition = NSCondition()
    private var jobs = CircularBuffer<@Sendable () -> Void>()

    /// The process's lane.
    package static let shared = BackgroundLane(threads: ProcessInfo.processInfo.activeProcessorCount, name: "nimbus-lane")

    /// Starts `threads` threads at `priority`; they live as long as the process.
    package init(threads: Int, name: String, priority: ThreadPriority = .idle) {
        for index in 0..<max(1, threads) {
            let thread = Thread { [self] in
                priority.applyToCurrentThread()
                loop()
            }
            thread.name = "\(name)-\(index)"
            #if !os(Linux)
            // Not `.background`, which Apple's platforms may throttle for seconds: these are
            // requests a client waits for.
            thread.qualityOfService = .utility
            #endif
            thread.start()
        }
    }

    private func loop() {
        condition.lock()
        while true {
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
            condition.lock()
        }
    }

    fileprivate func add(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }
}

@available(macOS 15, iOS 18, tvOS 18, watchOS 11, *)
extension BackgroundLane: TaskExecutor {
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        add { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

extension BackgroundLane {
    /// Runs `body` with this lane as its tasks' preferred executor (where the platform has task
    /// executors: Linux, and Apple platforms from macOS 15; elsewhere, as usual).
    package func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) {
            return try await withTaskExecutorPreference(self, operation: body)
        }
        return try await body()
    }
}
