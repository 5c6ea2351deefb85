import Logging

/// Keeps secrets out of log lines: the values of metadata keys that name a secret, and the
/// values of `ckAPIToken=`, `ckWebAuthToken=`, `password=` and `Bearer …` inside a message or a
/// metadata value, become `[redacted]`. The server's own log statements never write tokens
/// or record contents; this is the net under them, applied by ``ServerLogHandler`` and the
/// dashboard's ``LogTail``.
///
/// ```swift
/// LogRedaction.redact("GET /x?ckAPIToken=abc&b=1")   // "GET /x?ckAPIToken=[redacted]&b=1"
/// LogRedaction.isSecretKey("webAuthToken")           // true
/// ```
public enum LogRedaction {
    public static let replacement = "[redacted]"

    /// Lowercased fragments of metadata keys whose values are secrets.
    static let secretKeyFragments = ["token", "password", "secret", "authorization", "cookie", "apikey"]
    /// Markers followed by a secret, up to the next `&`, space, quote or end of text (matched
    /// ignoring ASCII case).
    static let markers: [[UInt8]] = ["ckapitoken=", "ckwebauthtoken=", "password=", "bearer ", "ckwebauthtoken%3d"].map {
        Array($0.utf8)
    }

    /// Whether a metadata key names a secret (`apiToken`, `X-Password`, `authorization`…).
    public static func isSecretKey(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return secretKeyFragments.contains { lowered.contains($0) }
    }

    /// `text` with the secret after each marker replaced by ``replacement``.
    public static func redact(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        var index = 0
        var copiedThrough = 0
        while index < bytes.count {
            guard let marker = markers.first(where: { matches($0, in: bytes, at: index) }) else {
                index += 1
                continue
            }
            let valueStart = index + marker.count
            var valueEnd = valueStart
            while valueEnd < bytes.count, !isTerminator(bytes[valueEnd]) { valueEnd += 1 }
            if valueEnd > valueStart {
                if output.isEmpty { output.reserveCapacity(bytes.count) }
                output.append(contentsOf: bytes[copiedThrough..<valueStart])
                output.append(contentsOf: replacement.utf8)
                copiedThrough = valueEnd
            }
            index = max(valueEnd, index + 1)
        }
        guard copiedThrough > 0 else { return text }
        output.append(contentsOf: bytes[copiedThrough...])
        return String(decoding: output, as: UTF8.self)
    }

    /// A metadata value with every string in it redacted (and all of it, under a secret key).
    static func redact(_ value: Logger.MetadataValue, key: String) -> Logger.MetadataValue {
        if isSecretKey(key) { return .string(replacement) }
        return redact(value)
    }

    static func redact(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let string): return .string(redact(string))
        case .stringConvertible(let convertible): return .string(redact(convertible.description))
        case .array(let values): return .array(values.map { redact($0) })
        case .dictionary(let values):
            return .dictionary(Dictionary(uniqueKeysWithValues: values.map { ($0.key, redact($0.value, key: $0.key)) }))
        }
    }

    private static func matches(_ marker: [UInt8], in bytes: [UInt8], at index: Int) -> Bool {
        guard bytes.count - index >= marker.count else { return false }
        for offset in 0..<marker.count {
            var byte = bytes[index + offset]
            if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { byte += 32 }
            if byte != marker[offset] { return false }
        }
        return true
    }

    private static func isTerminator(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "&") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\"")
            || byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: ",")
            || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
    }
}
