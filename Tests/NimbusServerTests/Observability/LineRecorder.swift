import Logging
import NIOConcurrencyHelpers

/// A log handler that keeps every line a server writes, as `level: message key=value …`
/// (metadata sorted), for tests that read what was logged.
final class LineRecorder: Sendable {
    private let lines = NIOLockedValueBox<[String]>([])

    var recorded: [String] { lines.withLockedValue { $0 } }

    /// A logger at `level` writing here.
    func logger(level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "nimbus-test-recorder") { _ in Handler(recorder: self) }
        logger.logLevel = level
        return logger
    }

    private struct Handler: LogHandler {
        let recorder: LineRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = metadata.merging(event.metadata ?? [:]) { $1 }.sorted { $0.key < $1.key }
            let line = "\(event.level): \(event.message)" + fields.map { " \($0.key)=\($0.value)" }.joined()
            recorder.lines.withLockedValue { $0.append(line) }
        }
    }
}
