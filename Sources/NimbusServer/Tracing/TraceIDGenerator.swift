import NIOConcurrencyHelpers

/// Where the tracer's span and trace IDs come from: SplitMix64 over a 64-bit state seeded once
/// from the system's generator, under a lock. Asking the kernel for every ID (what
/// `SpanID.random()` does) showed in the profile of a traced request; W3C asks IDs to be
/// unique and random-looking, not secret, and SplitMix64 never repeats within 2⁶⁴ draws.
package final class TraceIDGenerator: Sendable {
    private let state: NIOLockedValueBox<UInt64>

    /// - Parameter seed: the first state (tests pass a fixed one; the server a random one).
    package init(seed: UInt64) {
        state = NIOLockedValueBox(seed)
    }

    /// The next 64 random bits.
    package func next() -> UInt64 {
        var z = state.withLockedValue { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            return state
        }
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The generator as a `RandomNumberGenerator`, for `SpanID.random(using:)`.
    struct Source: RandomNumberGenerator {
        let generator: TraceIDGenerator
        mutating func next() -> UInt64 { generator.next() }
    }

    var source: Source { Source(generator: self) }
}
