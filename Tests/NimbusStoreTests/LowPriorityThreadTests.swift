import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import NimbusSQLite
@testable import NimbusStore

/// The thread the trace file is written on: jobs run on one thread at nice 19, their results
/// and errors come back, and `stop()` waits for the running job, cancels queued ones and refuses new ones.
@Suite("Low-priority writer thread")
struct LowPriorityThreadTests {
    struct Refused: Error {}

    @Test func jobsRunOnOneThreadAtTheLowestPriority() async throws {
        let thread = LowPriorityThread(name: "nimbus-test-low", priority: .idle)
        defer { thread.stop() }
        let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for job in 0..<20 { group.addTask { (job, try await thread.run { job * 2 }) } }
            var results: [Int: Int] = [:]
            for try await (job, doubled) in group { results[job] = doubled }
            return results
        }
        #expect(results == Dictionary(uniqueKeysWithValues: (0..<20).map { ($0, $0 * 2) }))
        await #expect(throws: Refused.self) { try await thread.run { throw Refused() } }

        let first = try await thread.run { ObjectIdentifier(Thread.current) }
        let second = try await thread.run { ObjectIdentifier(Thread.current) }
        #expect(first == second, "one thread")
        #if os(Linux)
        let nice = try await thread.run { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }
        #expect(nice == 19)
        let policy = try await thread.run { sched_getscheduler(0) }
        #expect(policy == ThreadPriority.schedIdle)
        #endif
    }

    @Test func theLowestPriorityIsNice19WithoutTheIdlePolicy() async throws {
        let thread = LowPriorityThread(name: "nimbus-test-low", priority: .lowest)
        defer { thread.stop() }
        #if os(Linux)
        let (nice, policy) = try await thread.run {
            (getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), sched_getscheduler(0))
        }
        #expect(nice == 19)
        #expect(policy == SCHED_OTHER)
        #else
        #expect(try await thread.run { 1 } == 1)
        #endif
    }

    @Test func stopWaitsForTheRunningJobCancelsQueuedOnesAndRefusesLaterOnes() async throws {
        let thread = LowPriorityThread(name: "nimbus-test-low", priority: .idle)
        let started = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let finished = Flag()
        let running = Task {
            try await thread.run { started.signal(); gate.wait(); finished.set(); return 1 }
        }
        // Waits for the job to start without blocking a thread of the cooperative pool.
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { started.wait(); continuation.resume() }
        }
        let queued = Task { try await thread.run { 2 } }
        // `stop()` blocks until the running job ends, so it is called off the cooperative pool;
        // it reports whether that job had finished when it returned.
        let stopped = Task {
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    thread.stop()
                    continuation.resume(returning: finished.isSet)
                }
            }
        }
        await #expect(throws: CancellationError.self) { try await queued.value }
        gate.signal()
        #expect(await stopped.value, "stop() returned only after the running job ended")
        #expect(try await running.value == 1)
        await #expect(throws: CancellationError.self) { try await thread.run { 3 } }
    }

    @Test func aJobMayStopItsOwnThread() async throws {
        let thread = LowPriorityThread(name: "nimbus-test-low", priority: .idle)
        #expect(try await thread.run { thread.stop(); return 1 } == 1)
        await #expect(throws: CancellationError.self) { try await thread.run { 2 } }
    }
}

/// A flag set on one thread and read on another.
private final class Flag: @unchecked Sendable {
    // @unchecked: `value` is only read or written while `lock` is held.
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
