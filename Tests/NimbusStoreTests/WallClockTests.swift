import Foundation
import NimbusStore
import Testing

/// The test form of the wall clock: it moves only when told, and every `WallClock` made from
/// it reads its current time.
@Suite("ManualWallClock")
struct WallClockTests {
    @Test func itMovesOnlyWhenSetOrAdvancedAndItsWallClocksFollow() {
        let manual = ManualWallClock(millis: 1_000)
        let clock = manual.wallClock
        #expect(clock.nowMillis() == 1_000)
        #expect(clock.nowMillis() == 1_000, "no time passes by itself")
        manual.advance(by: .milliseconds(1_500))
        #expect(clock.nowMillis() == 2_500, "a clock made earlier reads the new time")
        manual.advance(by: .seconds(-2))
        #expect(manual.nowMillis == 500)
        manual.advance(by: .microseconds(999))
        #expect(manual.nowMillis == 500, "to the millisecond, rounding toward zero")
        manual.set(millis: 42)
        #expect(clock.nowMillis() == 42)
        // `Date` counts from 2001, so a time since 1970 comes back within a microsecond.
        #expect(abs(clock.now().timeIntervalSince1970 - 0.042) < 1e-6)
    }

    @Test func aFixedClockAlwaysReadsTheSame() {
        let clock = WallClock.fixed(millis: 7)
        #expect(clock.nowMillis() == 7)
        #expect(clock.nowMillis() == 7)
    }
}
