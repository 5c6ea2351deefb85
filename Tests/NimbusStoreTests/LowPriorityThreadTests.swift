import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import NimbusStore

/// The thread the trace file is written on: jobs run on one thread at nice 19, their results
/// and errors come back, and after `stop()` the running job finishes and new ones are refused.
@Suite("Low-priority writer thread")
struct LowPriorityThreadTests {
    struct Refused: Error {}

    @Test func jobsRunOnOneThreadAtTheLowestPriority() async throws {
        let thread = LowPriorityThread(name: "nimbus-test-low")
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
        #endif
    }

    @Test func stopLetsTheRunningJobFinishAndRefusesLaterOnes() async throws {
        let thread = LowPriorityThread(name: "nimbus-test-low")
        let started = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let running = Task { try await thread.run { started.signal(); gate.wait(); return 1 } }
        // Waits for the job to start without blocking a thread of the cooperative pool.
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { started.wait(); continuation.resume() }
        }
        thread.stop()
        gate.signal()
        #expect(try await running.value == 1)
        await #expect(throws: CancellationError.self) { try await thread.run { 3 } }
    }
}
