import Foundation
import Logging
import NIOConcurrencyHelpers
import NimbusServer
import Testing

/// `--log-format text|json`: one line per event, every metadata key, valid JSON whatever
/// the metadata holds.
@Suite("Server log handler")
struct ServerLogHandlerTests {
    static let fixedTime = Date(timeIntervalSince1970: 1_795_000_000.125)

    /// The line a handler writes for one event.
    static func render(_ format: LogFormat, _ message: String, _ metadata: Logger.Metadata, level: Logger.Level = .info) -> String {
        let box = NIOLockedValueBox<[String]>([])
        var logger = Logger(label: "nimbus") { label in
            ServerLogHandler(label: label, format: format, now: { fixedTime }, write: { line in box.withLockedValue { $0.append(line) } })
        }
        logger.logLevel = .trace
        logger.log(level: level, "\(message)", metadata: metadata)
        let lines = box.withLockedValue { $0 }
        return lines.count == 1 ? lines[0] : "expected one line, got \(lines)"
    }

    static func object(_ line: String) throws -> [String: Any] {
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1, "one line: \(line)")
        let parsed = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(parsed as? [String: Any])
    }

    @Test func jsonLinesHoldTimeLevelMessageAndEveryMetadataKey() throws {
        let line = Self.render(
            .json, "store open", ["engine": "sqlite", "request_id": "abc", "n": .stringConvertible(42), "list": ["a", "b"]],
            level: .notice)
        let object = try Self.object(line)
        #expect(object["time"] as? String == "2026-11-18T11:06:40.125Z")
        #expect(object["level"] as? String == "notice")
        #expect(object["label"] as? String == "nimbus")
        #expect(object["message"] as? String == "store open")
        #expect(object["engine"] as? String == "sqlite")
        #expect(object["request_id"] as? String == "abc")
        #expect(object["n"] as? String == "42")
        #expect(object["list"] as? [String] == ["a", "b"])
    }

    @Test func textLinesAreOneLineWithSortedMetadata() {
        let line = Self.render(.text, "two\nlines", ["b": "2", "a": "1"], level: .warning)
        #expect(line == "2026-11-18T11:06:40.125Z warning nimbus: two\\nlines a=1 b=2\n")
    }

    @Test func keysThatClashWithTheLineFieldsAreKeptApart() throws {
        let object = try Self.object(Self.render(.json, "real", ["message": "fake", "time": "then", "level": "none"]))
        #expect(object["message"] as? String == "real")
        #expect(object["metadata.message"] as? String == "fake")
        #expect(object["metadata.time"] as? String == "then")
        #expect(object["level"] as? String == "info")
    }

    /// Seeded fuzzing: random keys and values of quotes, backslashes, control characters,
    /// line separators, emoji and nested lists and dictionaries always give one JSON line
    /// whose values read back as written.
    @Test func oddMetadataAlwaysGivesOneValidJSONLine() throws {
        var generator = SplitMix(seed: 20)
        let alphabet: [Character] = ["a", "Z", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1F}", "\u{7F}", "\u{2028}", "\u{2029}", "é", "😀", " ", "{", "}", ":", ",", "/"]
        func text(_ length: Int) -> String {
            String((0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
        }
        for _ in 0..<300 {
            var metadata: Logger.Metadata = [:]
            var expected: [String: String] = [:]
            for _ in 0..<Int(generator.next() % 5) {
                let key = "k" + text(Int(generator.next() % 6))
                let value = text(Int(generator.next() % 12))
                guard !LogRedaction.isSecretKey(key) else { continue }
                metadata[key] = .string(value)
                expected[key] = LogRedaction.redact(value)
            }
            metadata["nested"] = .dictionary(["list": [.string(text(3)), .dictionary(["x": .string(text(4))])]])
            let message = text(Int(generator.next() % 20))
            let object = try Self.object(Self.render(.json, message, metadata))
            #expect(object["message"] as? String == LogRedaction.redact(message))
            for (key, value) in expected { #expect(object[key] as? String == value, "key \(key.debugDescription)") }
            #expect(object["nested"] is [String: Any])
        }
    }
}

/// A small seeded generator, so a failing fuzz case is the same on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
