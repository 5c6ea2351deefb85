import HTTPTypes
import Logging

/// The identifier of one HTTP request: returned in the `X-Request-ID` response header,
/// written as `request_id` on every log line of the request, and the `uuid` of its CloudKit
/// error bodies, so that a client's error report leads to the server's log lines.
///
/// A client may choose it by sending `X-Request-ID` (at most 64 characters of
/// `A-Z a-z 0-9 . _ -`); anything else is replaced by one the server makes.
///
/// ```swift
/// RequestID.accepting("sync-42")        // "sync-42"
/// RequestID.accepting("no spaces")      // nil: the server makes its own
/// ```
enum RequestID {
    static let header = HTTPField.Name("X-Request-ID")!
    /// The logger metadata key.
    static let metadataKey = "request_id"
    static let maxLength = 64

    /// The request being handled by the current task, as ``RequestIDMiddleware`` bound it
    /// (`nil` outside a request).
    @TaskLocal static var current: String?

    /// `metadata` with the current request's `request_id`, for lines written by a logger that
    /// is not the request's own (the mail senders', made once at start).
    static func tagged(_ metadata: Logger.Metadata) -> Logger.Metadata {
        guard let current else { return metadata }
        var metadata = metadata
        metadata[metadataKey] = .string(current)
        return metadata
    }

    /// `candidate` when it is a usable request ID, `nil` otherwise.
    static func accepting(_ candidate: String?) -> String? {
        guard let candidate, !candidate.isEmpty, candidate.utf8.count <= maxLength else { return nil }
        for byte in candidate.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                continue
            default:
                return nil
            }
        }
        return candidate
    }

    /// A new request ID: 32 lowercase hexadecimal digits (128 bits) from `generator`.
    static func make(using generator: inout some RandomNumberGenerator) -> String {
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return String(unsafeUninitializedCapacity: 32) { buffer in
            for index in 0..<16 {
                let shift = UInt64(60 - 4 * index)
                buffer[index] = hexDigit(UInt8((high >> shift) & 0xF))
                buffer[16 + index] = hexDigit(UInt8((low >> shift) & 0xF))
            }
            return 32
        }
    }

    /// A new request ID from the system's secure generator.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return make(using: &generator)
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
