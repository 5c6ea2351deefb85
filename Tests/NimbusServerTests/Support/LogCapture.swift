import Logging

/// A logger whose messages (with their metadata, as `level: message key=value …`) a test
/// awaits: how a test learns that a background service (the compactor) did something, without
/// polling or sleeping.
struct LogCapture: Sendable {
    let logger: Logger
    private let messages: AsyncStream<String>

    init(level: Logger.Level = .info) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        self.messages = stream
        var logger = Logger(label: "nimbus-test-capture") { _ in LineLogHandler { continuation.yield($0) } }
        logger.logLevel = level
        self.logger = logger
    }

    /// The first message (from now on) that satisfies `matches`; fails after `timeout`.
    func first(
        timeout: Duration = .seconds(10), where matches: @escaping @Sendable (String) -> Bool
    ) async throws -> String {
        let messages = self.messages
        return try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask {
                for await message in messages where matches(message) { return message }
                throw TestTimeout("the log ended before the awaited message")
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw TestTimeout("no awaited log message within \(timeout)")
            }
            defer { group.cancelAll() }
            guard let message = try await group.next() else { throw TestTimeout("no log message") }
            return message
        }
    }
}
