import NIOConcurrencyHelpers
import NimbusProtocol
import NimbusServer
import NimbusStore
import Testing

/// The throttle's memory stays bounded whatever keys clients send, and the in-flight cap
/// queues a user's extra requests in order.
@Suite struct ThrottleMemoryTests {
    /// A store that knows no container: every container uses the server's defaults.
    struct NoSettings: ThrottleStore {
        func throttleLimits(container: String, environment: ContainerEnvironment) async throws -> ThrottleLimits {
            throw AccountError("no container \(container)")
        }
        func setThrottleLimits(_ limits: ThrottleLimits, container: String, environment: ContainerEnvironment) async throws {}
    }

    /// Alice's requests running and waiting.
    static func load(_ limiter: InFlightLimiter) -> [Int] {
        let load = limiter.load("alice")
        return [load.running, load.waiting]
    }

    @Test func bucketsStayBoundedWhateverAddressesClientsSend() async throws {
        let clock = ManualWallClock(millis: 1_800_000_000_000)
        var settings = ThrottleSettings()
        settings.maxKeys = 64
        settings.defaults.addressRate = 1
        settings.defaults.addressBurst = 1
        let throttle = RequestThrottle(settings: settings, store: NoSettings(), clock: clock.wallClock)
        for index in 0..<10_000 {
            try await throttle.checkAddress("10.0.\(index / 256).\(index % 256)", container: "c", environment: .development)
            #expect(throttle.bucketCount <= 64)
        }
        // The most recent address is remembered: its next request is refused.
        await #expect(throws: CloudKitError.self) {
            try await throttle.checkAddress("10.0.39.15", container: "c", environment: .development)
        }
    }

    @Test func aUsersRequestsBeyondTheCapWaitInOrderAndTheQueueIsBounded() async throws {
        let limiter = InFlightLimiter()
        try await limiter.acquire("alice", limit: 1, maxWaiting: 1, what: "this user")
        let second = Task { try await limiter.acquire("alice", limit: 1, maxWaiting: 1, what: "this user") }
        for _ in 0..<10_000 where limiter.load("alice").waiting == 0 { await Task.yield() }
        #expect(Self.load(limiter) == [1, 1])
        // A third request finds the queue full.
        await #expect(throws: CloudKitError.self) {
            try await limiter.acquire("alice", limit: 1, maxWaiting: 1, what: "this user")
        }
        // Another user is not held up.
        try await limiter.acquire("bob", limit: 1, maxWaiting: 1, what: "this user")
        limiter.release("bob")
        limiter.release("alice")
        #expect(try await second.value == .usual)  // no contention cap: no background lane
        #expect(Self.load(limiter) == [1, 0])
        limiter.release("alice")
        #expect(Self.load(limiter) == [0, 0])
    }

    @Test func aCancelledWaiterGivesUpItsTurn() async throws {
        let limiter = InFlightLimiter()
        try await limiter.acquire("alice", limit: 1, maxWaiting: 4, what: "this user")
        let waiter = Task { try await limiter.acquire("alice", limit: 1, maxWaiting: 4, what: "this user") }
        for _ in 0..<10_000 where limiter.load("alice").waiting == 0 { await Task.yield() }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(Self.load(limiter) == [1, 0])
        limiter.release("alice")
        #expect(Self.load(limiter) == [0, 0])
    }

    /// Waits (yielding, never sleeping) until `key` has `waiting` requests queued.
    static func awaitWaiting(_ limiter: InFlightLimiter, _ key: String, _ waiting: Int) async {
        for _ in 0..<10_000 where limiter.load(key).waiting < waiting { await Task.yield() }
    }

    @Test func aUserBesideAnotherRunsOneRequestAtOnceAndAloneTheFullCap() async throws {
        let clock = ManualWallClock(millis: 1_800_000_000_000)
        let limiter = InFlightLimiter(contention: .init(limit: 1, windowMillis: 100), clock: clock.wallClock)
        // Alone, Alice runs four at once.
        for _ in 0..<4 { try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user") }
        #expect(Self.load(limiter) == [4, 0])
        for _ in 0..<4 { limiter.release("alice") }

        // Bob has a request running: Alice's second waits for her first.
        try await limiter.acquire("bob", limit: 4, maxWaiting: 8, what: "this user")
        try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user")
        let second = Task { try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user") }
        let third = Task { try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user") }
        await Self.awaitWaiting(limiter, "alice", 2)
        #expect(Self.load(limiter) == [1, 2])
        limiter.release("alice")
        #expect(try await second.value == .background)  // waited beside Bob
        #expect(Self.load(limiter) == [1, 1])

        // Bob is done, but arrived within the window: still one at a time.
        limiter.release("bob")
        clock.advance(by: .milliseconds(50))
        limiter.release("alice")
        #expect(try await third.value == .background)  // Bob arrived within the window
        #expect(Self.load(limiter) == [1, 0])

        // Past the window, Alice alone again gets the full cap at once.
        clock.advance(by: .milliseconds(100))
        try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user")
        try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user")
        #expect(Self.load(limiter) == [3, 0])
        for _ in 0..<3 { limiter.release("alice") }
        #expect(Self.load(limiter) == [0, 0])
    }

    @Test func whenTheOtherUserLeavesTheWaitingRequestsOfAUserAllRunAgain() async throws {
        let clock = ManualWallClock(millis: 1_800_000_000_000)
        let limiter = InFlightLimiter(contention: .init(limit: 1, windowMillis: 100), clock: clock.wallClock)
        try await limiter.acquire("bob", limit: 4, maxWaiting: 8, what: "this user")
        try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user")
        let waiters = (0..<3).map { _ in
            Task { try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user") }
        }
        await Self.awaitWaiting(limiter, "alice", 3)
        #expect(Self.load(limiter) == [1, 3])
        limiter.release("bob")
        clock.advance(by: .milliseconds(101))
        // One release of Alice's lets all three waiting run: her cap is 4 again.
        limiter.release("alice")
        for waiter in waiters { #expect(try await waiter.value == .usual) }  // alone again
        #expect(Self.load(limiter) == [3, 0])
        for _ in 0..<3 { limiter.release("alice") }
        #expect(Self.load(limiter) == [0, 0])
    }

    /// A pacer whose time moves only when told, and whose rests are noted, not waited.
    final class NotedRests: Sendable {
        let nanos = NIOLockedValueBox<Int64>(0)
        let rests = NIOLockedValueBox<[Duration]>([])

        var pacer: InFlightLimiter.Pacer {
            InFlightLimiter.Pacer(
                now: { self.nanos.withLockedValue { $0 } },
                sleep: { rest in self.rests.withLockedValue { $0.append(rest) } })
        }

        func advance(by duration: Duration) {
            nanos.withLockedValue { $0 += duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000 }
        }
    }

    /// Bob and Alice each have a request running, and Alice a second one waiting (returned).
    static func aliceWaitsBesideBob(_ limiter: InFlightLimiter) async throws -> Task<InFlightLimiter.Lane, any Error> {
        try await limiter.acquire("bob", limit: 4, maxWaiting: 8, what: "this user")
        try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user")
        let second = Task { () async throws -> InFlightLimiter.Lane in try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user") }
        await awaitWaiting(limiter, "alice", 1)
        return second
    }

    @Test func besideAnotherUserAUserWithRequestsWaitingRestsBetweenThem() async throws {
        let clock = ManualWallClock(millis: 1_800_000_000_000)
        let time = NotedRests()
        let limiter = InFlightLimiter(
            contention: .init(limit: 1, windowMillis: 100, rest: 1, maxRest: .milliseconds(20)), clock: clock.wallClock,
            pacer: time.pacer)
        // Alone: requests waiting for the cap of 4 start without a rest.
        for _ in 0..<4 { try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user") }
        let fifth = Task { try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user") }
        await Self.awaitWaiting(limiter, "alice", 1)
        time.advance(by: .milliseconds(3))
        limiter.release("alice")
        #expect(try await fifth.value == .usual)  // waited while alone
        for _ in 0..<4 { limiter.release("alice") }
        #expect(time.rests.withLockedValue { $0 }.isEmpty)

        // Beside Bob, the request waiting behind one that ran 4 ms rests 4 ms first…
        let second = try await Self.aliceWaitsBesideBob(limiter)
        time.advance(by: .milliseconds(4))
        limiter.release("alice")
        #expect(try await second.value == .background)
        #expect(time.rests.withLockedValue { $0 } == [.milliseconds(4)])

        // …and never more than the longest rest, after a slow one.
        let third = Task { try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user") }
        await Self.awaitWaiting(limiter, "alice", 1)
        time.advance(by: .milliseconds(4) + .milliseconds(300))  // its 4 ms rest, then 300 ms of work
        limiter.release("alice")
        #expect(try await third.value == .background)
        #expect(time.rests.withLockedValue { $0 } == [.milliseconds(4), .milliseconds(20)])

        // A request sent when none of hers waits starts at once: one at a time never rests.
        limiter.release("alice")
        time.advance(by: .milliseconds(5))
        try await limiter.acquire("alice", limit: 4, maxWaiting: 8, what: "this user")
        limiter.release("alice")
        #expect(time.rests.withLockedValue { $0 }.count == 2)
        limiter.release("bob")
        #expect(Self.load(limiter) == [0, 0])
    }

    @Test func aRequestCancelledWhileItRestsGivesBackItsPlace() async throws {
        let time = NotedRests()
        let resting = AsyncStream<Void>.makeStream()
        let limiter = InFlightLimiter(
            contention: .init(limit: 1, windowMillis: 100, rest: 1), clock: ManualWallClock(millis: 0).wallClock,
            pacer: InFlightLimiter.Pacer(
                now: { time.nanos.withLockedValue { $0 } },
                sleep: { _ in
                    resting.continuation.yield()
                    try await Task.sleep(for: .seconds(3600))
                }))
        let second = try await Self.aliceWaitsBesideBob(limiter)
        time.advance(by: .milliseconds(2))
        limiter.release("alice")
        for await _ in resting.stream { break }
        #expect(Self.load(limiter) == [1, 0])
        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(Self.load(limiter) == [0, 0])
        limiter.release("bob")
    }
}
