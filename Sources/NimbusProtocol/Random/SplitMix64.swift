/// SplitMix64: a small, fast, seeded random number generator. The same seed gives the same
/// sequence on every platform, so what is drawn from it (a fuzz test's inputs) reproduces.
/// Not for secrets.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    package mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }
    package mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    /// `true` with the given probability.
    package mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &self) < probability }
    /// One of `values`, which must not be empty.
    package mutating func pick<T>(_ values: [T]) -> T { values[int(0..<values.count)] }
}
