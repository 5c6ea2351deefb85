import Foundation
import Logging

/// How `nimbus serve` writes its log lines.
public enum LogFormat: String, Sendable, CaseIterable {
    /// `2026-11-24T04:00:00.123Z info nimbus: message key=value …`, for people.
    case text
    /// One JSON object a line: `time`, `level`, `label`, `message` and every metadata key,
    /// for log collectors.
    case json
}

/// The server's log handler: text or JSON lines, with secrets redacted (``LogRedaction``).
///
/// ```swift
/// let logger = Logger(label: "nimbus") { ServerLogHandler(label: $0, format: .json) }
/// logger.info("store open", metadata: ["engine": "sqlite"])
/// // {"time":"2026-11-24T04:00:00.123Z","level":"info","label":"nimbus","message":"store open","engine":"sqlite"}
/// ```
public struct ServerLogHandler: LogHandler {
    public let label: String
    public let format: LogFormat
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    /// Writes one finished line (with its newline); standard error by default.
    private let write: @Sendable (String) -> Void
    /// The time of each line (injected by tests).
    private let now: @Sendable () -> Date

    /// A handler writing `format` lines through `write` (standard error by default).
    public init(
        label: String, format: LogFormat, now: @escaping @Sendable () -> Date = Date.init,
        write: @escaping @Sendable (String) -> Void = ServerLogHandler.standardError
    ) {
        self.label = label
        self.format = format
        self.now = now
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { $1 } }
        write(Self.render(format: format, time: now(), level: event.level, label: label, message: "\(event.message)", metadata: all))
    }

    /// Writes `line` to standard error, unbuffered (one write per line, so lines of
    /// concurrent requests do not interleave).
    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// One log line, with its newline.
    static func render(
        format: LogFormat, time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata
    ) -> String {
        let message = LogRedaction.redact(message)
        let keys = metadata.keys.sorted()
        switch format {
        case .text:
            var line = "\(LogTime.iso8601(time)) \(level) \(label): \(message)"
            for key in keys {
                line += " \(key)=\(LogRedaction.redact(metadata[key]!, key: key))"
            }
            line = line.replacingOccurrences(of: "\n", with: "\\n")
            return line + "\n"
        case .json:
            var line = "{"
            JSONLine.appendMember("time", .string(LogTime.iso8601(time)), to: &line)
            JSONLine.appendMember("level", .string(level.rawValue), to: &line)
            JSONLine.appendMember("label", .string(label), to: &line)
            JSONLine.appendMember("message", .string(message), to: &line)
            for key in keys {
                // A metadata key that clashes with a field above keeps its value under `metadata.KEY`.
                let name = ["time", "level", "label", "message"].contains(key) ? "metadata.\(key)" : key
                JSONLine.appendMember(name, LogRedaction.redact(metadata[key]!, key: key), to: &line)
            }
            return line + "}\n"
        }
    }
}

/// JSON text of log metadata values (strings escaped as RFC 8259 says).
enum JSONLine {
    static func appendMember(_ name: String, _ value: Logger.MetadataValue, to line: inout String) {
        if line.utf8.last != UInt8(ascii: "{") { line += "," }
        appendString(name, to: &line)
        line += ":"
        appendValue(value, to: &line)
    }

    static func appendValue(_ value: Logger.MetadataValue, to line: inout String) {
        switch value {
        case .string(let string): appendString(string, to: &line)
        case .stringConvertible(let convertible): appendString(convertible.description, to: &line)
        case .array(let values):
            line += "["
            for (index, element) in values.enumerated() {
                if index > 0 { line += "," }
                appendValue(element, to: &line)
            }
            line += "]"
        case .dictionary(let values):
            line += "{"
            for key in values.keys.sorted() { appendMember(key, values[key]!, to: &line) }
            line += "}"
        }
    }

    static func appendString(_ string: String, to line: inout String) {
        line += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case "\u{2028}": line += "\\u2028"
            case "\u{2029}": line += "\\u2029"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    line += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    line.unicodeScalars.append(scalar)
                }
            }
        }
        line += "\""
    }
}

/// UTC timestamps of log lines, `2026-11-24T04:00:00.123Z`, without a formatter object.
enum LogTime {
    static func iso8601(_ date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let days = millis >= 0 ? millis / 86_400_000 : (millis - 86_399_999) / 86_400_000
        let msOfDay = millis - days * 86_400_000
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(msOfDay / 3_600_000, 2)):"
            + "\(pad(msOfDay / 60_000 % 60, 2)):\(pad(msOfDay / 1000 % 60, 2)).\(pad(msOfDay % 1000, 3))Z"
    }
}
