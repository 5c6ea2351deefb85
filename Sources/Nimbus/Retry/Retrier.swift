/// Runs work again after retryable failures, following a ``RetryPolicy``, and splits batches
/// the server found too large.
///
/// ```swift
/// let retrier = Retrier(policy: .default)
/// let saved = try await retrier.run { try await database.save(record) }
///
/// // Saves any number of records: halves a batch on limitExceeded, retries throttling.
/// let pages = try await retrier.runBatched(records) { batch in
///     try await database.modifyRecords(saving: batch, atomically: false).saveResults
/// }
/// ```
///
/// Waiting and randomness are injectable, so tests run without real sleeps.
public struct Retrier: Sendable {
    public var policy: RetryPolicy
    private let sleep: @Sendable (Duration) async throws -> Void
    private let random: @Sendable () -> Double
    private let onRetry: (@Sendable (_ failure: Int, _ error: NimbusError, _ delay: Duration) -> Void)?

    /// - Parameters:
    ///   - policy: when to retry and how long to wait.
    ///   - sleep: how to wait (defaults to `Task.sleep`); must throw when the task is cancelled.
    ///   - random: a source of numbers in `0..<1` for jitter.
    ///   - onRetry: called before each wait, for logging.
    public init(
        policy: RetryPolicy = .default,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        onRetry: (@Sendable (_ failure: Int, _ error: NimbusError, _ delay: Duration) -> Void)? = nil
    ) {
        self.policy = policy
        self.sleep = sleep
        self.random = random
        self.onRetry = onRetry
    }

    /// Runs `body`, again after each retryable ``NimbusError`` while attempts remain; the
    /// last error is thrown. Errors that are not retryable are thrown at once.
    public func run<Value: Sendable>(_ body: @Sendable () async throws -> Value) async throws -> Value {
        var failures = 0
        while true {
            do {
                return try await body()
            } catch let error as NimbusError {
                failures += 1
                guard policy.shouldRetry(afterFailure: failures, error: error) else { throw error }
                let delay = policy.delay(afterFailure: failures, error: error, random: random())
                onRetry?(failures, error, delay)
                do { try await sleep(delay) } catch { throw NimbusError.cancelled() }
            }
        }
    }

    /// Runs `body` on all `items` at once; when the server answers
    /// ``NimbusError/Code/limitExceeded``, splits the batch in halves and runs each (again
    /// splitting as needed). Each batch is retried as ``run(_:)`` does.
    ///
    /// - Returns: the result of each batch that ran, in item order.
    public func runBatched<Item: Sendable, Value: Sendable>(
        _ items: [Item], _ body: @Sendable ([Item]) async throws -> Value
    ) async throws -> [Value] {
        guard !items.isEmpty else { return [] }
        do {
            return [try await run { try await body(items) }]
        } catch let error as NimbusError where error.code == .limitExceeded && items.count > 1 {
            let middle = items.count / 2
            let first = try await runBatched(Array(items[..<middle]), body)
            let second = try await runBatched(Array(items[middle...]), body)
            return first + second
        }
    }
}
