import Logging

/// A log handler that writes each line as `level: message key=value …` (the handler's and the
/// event's metadata, sorted by key) to `sink`: what the tests' log captures read.
struct LineLogHandler: LogHandler {
    let sink: @Sendable (String) -> Void
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    init(_ sink: @escaping @Sendable (String) -> Void) {
        self.sink = sink
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let fields = metadata.merging(event.metadata ?? [:]) { $1 }.sorted { $0.key < $1.key }
        sink("\(event.level): \(event.message)" + fields.map { " \($0.key)=\($0.value)" }.joined())
    }
}
