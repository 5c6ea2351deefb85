import Foundation
import NimbusProtocol

/// The one error type of the Nimbus SDK: a CloudKit-style ``Code``, a message, and what the
/// client needs to act on it.
///
/// Match on the code:
///
/// ```swift
/// do {
///     try await database.save(record)
/// } catch let error as NimbusError where error.code == .serverRecordChanged {
///     let merged = merge(error.clientRecord, error.ancestorRecord, error.serverRecord)
///     …
/// } catch let error as NimbusError where error.isRetryable {
///     try await Task.sleep(for: error.retryAfter ?? .seconds(1))
/// }
/// ```
///
/// Every failure the SDK reports is a `NimbusError`: server errors (mapped from the wire's
/// `serverErrorCode`), transport failures (``Code/networkFailure``,
/// ``Code/networkUnavailable``) and cancellation (``Code/operationCancelled``).
public struct NimbusError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var code: Code
    /// A human-readable explanation (the server's `reason` when it sent one).
    public var message: String
    /// Seconds to wait before retrying, when the server said (THROTTLED, TRY_AGAIN_LATER) or
    /// the HTTP response carried `Retry-After`.
    public var retryAfterSeconds: Double?
    /// The wire `serverErrorCode`, when the error came from the server.
    public var serverErrorCode: String?
    /// The HTTP status, when the error came from an HTTP response.
    public var httpStatus: Int?
    /// The server's request identifier (`uuid`), useful in bug reports.
    public var requestUUID: String?
    /// The record this error concerns, for per-item errors.
    public var recordID: Record.ID?
    /// The zone this error concerns, for per-item zone errors and ``Code/zoneNotFound``.
    public var zoneID: ZoneID?
    /// For ``Code/partialFailure``: the error of each item that failed.
    public var partialErrorsByItemID: [ItemID: NimbusError]
    /// For ``Code/serverRecordChanged``: the record the client tried to save.
    public var clientRecord: Record?
    /// For ``Code/serverRecordChanged``: the server's copy the client's edit was based on,
    /// rebuilt from the client record's change tracking (see ``Record/ancestorRecord``).
    public var ancestorRecord: Record?
    /// For ``Code/serverRecordChanged``: the server's current record, when the server sent it
    /// (Nimbus's CONFLICT extension does).
    public var serverRecord: Record?

    public init(
        _ code: Code, _ message: String, retryAfterSeconds: Double? = nil, serverErrorCode: String? = nil,
        httpStatus: Int? = nil, requestUUID: String? = nil, recordID: Record.ID? = nil, zoneID: ZoneID? = nil,
        partialErrorsByItemID: [ItemID: NimbusError] = [:], clientRecord: Record? = nil,
        ancestorRecord: Record? = nil, serverRecord: Record? = nil
    ) {
        self.code = code
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
        self.serverErrorCode = serverErrorCode
        self.httpStatus = httpStatus
        self.requestUUID = requestUUID
        self.recordID = recordID
        self.zoneID = zoneID
        self.partialErrorsByItemID = partialErrorsByItemID
        self.clientRecord = clientRecord
        self.ancestorRecord = ancestorRecord
        self.serverRecord = serverRecord
    }

    /// ``retryAfterSeconds`` as a `Duration`.
    public var retryAfter: Duration? {
        retryAfterSeconds.map { .milliseconds(Int64(($0 * 1000).rounded(.up))) }
    }

    /// Whether trying the same request again later can succeed.
    ///
    /// True for rate limiting, unavailability, busy zones and network failures. A
    /// ``Code/partialFailure`` is retryable when every failed item is retryable or only
    /// failed because another item of an atomic batch did (``Code/batchRequestFailed``).
    public var isRetryable: Bool {
        if code == .partialFailure {
            let causes = partialErrorsByItemID.values.filter { $0.code != .batchRequestFailed }
            return !causes.isEmpty && causes.allSatisfy(\.isRetryable)
        }
        return code.isRetryable
    }

    /// The error of one item of a ``Code/partialFailure``.
    public func partialError(for recordID: Record.ID) -> NimbusError? {
        partialErrorsByItemID[.record(recordID)]
    }

    public var description: String {
        var text = "NimbusError.\(code.rawValue): \(message)"
        if let retryAfterSeconds { text += " (retry after \(retryAfterSeconds)s)" }
        if !partialErrorsByItemID.isEmpty {
            let items = partialErrorsByItemID.map { "\($0.key): \($0.value.code.rawValue)" }.sorted()
            text += " [" + items.joined(separator: ", ") + "]"
        }
        return text
    }

    /// Cancellation, as the SDK reports it.
    static func cancelled() -> NimbusError { NimbusError(.operationCancelled, "the operation was cancelled") }
}

extension NimbusError {
    /// Identifies the item a per-item error belongs to.
    public enum ItemID: Hashable, Sendable, CustomStringConvertible {
        case record(Record.ID)
        case zone(ZoneID)
        case subscription(Subscription.ID)

        public var description: String {
            switch self {
            case .record(let id): return "record \(id)"
            case .zone(let id): return "zone \(id.zoneName)"
            case .subscription(let id): return "subscription \(id)"
            }
        }
    }
}

extension NimbusError.Code {
    /// Lets a `catch` clause match a code directly: `catch NimbusError.Code.zoneNotFound { … }`.
    public static func ~= (code: NimbusError.Code, error: any Error) -> Bool {
        (error as? NimbusError)?.code == code
    }
}
