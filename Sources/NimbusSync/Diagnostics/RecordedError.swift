import Foundation
import Nimbus

/// An error as the diagnostics keep it: its code, the server's `serverErrorCode` and reason,
/// and the wait the server asked for. Persisted with the outbox entry, zone or given-up
/// change it concerns, so it survives a relaunch.
///
/// ```swift
/// if let error = entry.lastError {
///     print("\(error.serverErrorCode ?? error.code): \(error.reason)")
/// }
/// ```
public struct RecordedError: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The SDK's code (``Nimbus/NimbusError/Code``'s raw value: `requestRateLimited`,
    /// `invalidArguments`, …).
    public var code: String
    /// The CloudKit `serverErrorCode` the server answered (`THROTTLED`, `BAD_REQUEST`, …);
    /// `nil` when the error did not come from the server (a network failure).
    public var serverErrorCode: String?
    /// What went wrong, in words (the server's `reason` when it gave one).
    public var reason: String
    /// The wait the server asked for (`retryAfter`), in seconds.
    public var retryAfterSeconds: Double?

    public init(code: String, serverErrorCode: String? = nil, reason: String, retryAfterSeconds: Double? = nil) {
        self.code = code
        self.serverErrorCode = serverErrorCode
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// Keeps what matters of `error` (any error: one that is not a ``Nimbus/NimbusError`` is
    /// kept as `internalError` with its description).
    public init(_ error: any Error) {
        if let error = error as? NimbusError {
            self.init(
                code: error.code.rawValue, serverErrorCode: error.serverErrorCode, reason: error.message,
                retryAfterSeconds: error.retryAfterSeconds)
        } else {
            self.init(code: NimbusError.Code.internalError.rawValue, reason: String(describing: error))
        }
    }

    /// ``code`` as the SDK's code, to compare: `error.nimbusCode == .requestRateLimited`.
    public var nimbusCode: NimbusError.Code { NimbusError.Code(rawValue: code) }

    public var description: String {
        var text = serverErrorCode.map { "\($0) (\(code))" } ?? code
        text += ": \(reason)"
        if let retryAfterSeconds { text += " (retry after \(retryAfterSeconds) s)" }
        return text
    }

    /// As stored in the local store's columns.
    var jsonText: String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    init?(jsonText: String?) {
        guard let jsonText, let decoded = try? JSONDecoder().decode(Self.self, from: Data(jsonText.utf8)) else {
            return nil
        }
        self = decoded
    }
}
