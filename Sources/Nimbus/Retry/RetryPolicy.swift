/// When to try a failed request again and how long to wait: exponential backoff with jitter,
/// a bounded number of attempts, and the server's `retryAfter` honoured when it gives one.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first one included. `1` never retries.
    public var maxAttempts: Int
    /// The wait before the first retry, before jitter.
    public var initialBackoff: Duration
    /// The longest wait between attempts (the server's `retryAfter` may be longer).
    public var maximumBackoff: Duration
    /// How much each wait grows over the previous one.
    public var multiplier: Double
    /// The share of each wait that is random, from 0 (none) to 1 (anywhere between zero and
    /// the full wait). Spreads retries of many clients apart.
    public var jitter: Double

    public init(
        maxAttempts: Int = 5, initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(60),
        multiplier: Double = 2, jitter: Double = 0.5
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.multiplier = max(1, multiplier)
        self.jitter = min(1, max(0, jitter))
    }

    /// Five attempts, waits from 0.5 s doubling up to 60 s, half of each wait random.
    public static let `default` = RetryPolicy()

    /// Never retries.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// The wait after failure number `failure` (1 for the first failure).
    ///
    /// - Parameters:
    ///   - failure: which failure this is, counting from 1.
    ///   - error: when it carries ``NimbusError/retryAfter``, that is the wait (never less).
    ///   - random: a number in `0..<1` that places the wait within its jitter range.
    public func delay(afterFailure failure: Int, error: NimbusError? = nil, random: Double) -> Duration {
        if let retryAfter = error?.retryAfter { return retryAfter }
        let exponent = Double(max(0, failure - 1))
        let base = min(seconds(initialBackoff) * pow(multiplier, exponent), seconds(maximumBackoff))
        let jittered = base * (1 - jitter) + base * jitter * min(max(random, 0), 1)
        return .milliseconds(Int64((jittered * 1000).rounded()))
    }

    /// Whether to try again after failure number `failure` with `error`.
    public func shouldRetry(afterFailure failure: Int, error: NimbusError) -> Bool {
        failure < maxAttempts && error.isRetryable
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private func pow(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        for _ in 0..<Int(exponent) {
            result *= base
            if result > 1e12 { break }
        }
        return result
    }
}
