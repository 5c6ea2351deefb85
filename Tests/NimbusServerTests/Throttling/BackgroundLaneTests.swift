import Foundation
import NimbusServer
import NimbusStore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The background lane: where a flooding user's requests run (docs/THROTTLING.md).
@Suite struct BackgroundLaneTests {
    /// The calling thread's scheduling policy and nice value (Linux), or `nil`.
    static func currentThreadPriority() -> (policy: Int32, nice: Int32)? {
        #if os(Linux)
        // PRIO_PROCESS with 0 is the calling thread on Linux.
        return (sched_getscheduler(0), getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
        #else
        return nil
        #endif
    }

    @Test func workInTheLaneRunsUnderSchedIdleAndTheCallerResumesAsBefore() async throws {
        let lane = BackgroundLane(threads: 1, name: "nimbus-test-lane")
        let before = Self.currentThreadPriority()
        let inside = try await lane.run { () async throws -> [(policy: Int32, nice: Int32)?] in
            var seen = [Self.currentThreadPriority()]
            await Task.yield()  // resumed in the lane again, not on the usual threads
            seen.append(Self.currentThreadPriority())
            return seen
        }
        let after = Self.currentThreadPriority()
        #if os(Linux)
        for priority in inside {
            #expect(priority?.policy == ThreadPriority.schedIdle)
            #expect(priority?.nice == 19)
        }
        #expect(before?.policy == after?.policy)
        #expect(after?.policy != ThreadPriority.schedIdle)
        #else
        #expect(inside.count == 2 && before == nil && after == nil)
        #endif
    }

    @Test func childTasksOfLaneWorkFinishAndAnErrorReachesTheCaller() async throws {
        let lane = BackgroundLane(threads: 1, name: "nimbus-test-lane")
        let order = try await lane.run { () async throws -> [Int] in
            await withTaskGroup(of: Int.self) { group in
                for index in 0..<20 { group.addTask { index } }
                var seen: [Int] = []
                for await index in group { seen.append(index) }
                return seen.sorted()
            }
        }
        #expect(order == Array(0..<20))
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await lane.run { () async throws -> Int in throw Refused() }
        }
    }
}
