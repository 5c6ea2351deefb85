import Logging
import NIOConcurrencyHelpers

/// A log handler that keeps every line a server writes, as `level: message key=value …`
/// (metadata sorted), for tests that read what was logged.
final class LineRecorder: Sendable {
    private let lines = NIOLockedValueBox<[String]>([])

    var recorded: [String] { lines.withLockedValue { $0 } }

    /// A logger at `level` writing here.
    func logger(level: Logger.Level = .trace) -> Logger {
        let lines = self.lines
        var logger = Logger(label: "nimbus-test-recorder") { _ in
            LineLogHandler { line in lines.withLockedValue { $0.append(line) } }
        }
        logger.logLevel = level
        return logger
    }
}
