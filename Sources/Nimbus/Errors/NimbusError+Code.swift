import NimbusProtocol

extension NimbusError {
    /// The kind of failure. Named after CloudKit's `CKError.Code` so that ported code reads
    /// the same; a struct rather than an enum so new codes don't break `switch` statements.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// Some items of a batch failed; see ``NimbusError/partialErrorsByItemID``.
        public static let partialFailure = Code(rawValue: "partialFailure")
        /// The record changed on the server since the client fetched it (CONFLICT, or EXISTS
        /// when creating). Carries the client, ancestor and server records.
        public static let serverRecordChanged = Code(rawValue: "serverRecordChanged")
        /// The change token is too old; fetch again from no token (Nimbus: CHANGE_TOKEN_EXPIRED).
        public static let changeTokenExpired = Code(rawValue: "changeTokenExpired")
        /// The zone does not exist (ZONE_NOT_FOUND).
        public static let zoneNotFound = Code(rawValue: "zoneNotFound")
        /// The record or item does not exist (NOT_FOUND).
        public static let unknownItem = Code(rawValue: "unknownItem")
        /// Too many requests; wait ``NimbusError/retryAfter`` (THROTTLED).
        public static let requestRateLimited = Code(rawValue: "requestRateLimited")
        /// The service is unavailable for now; wait ``NimbusError/retryAfter`` (TRY_AGAIN_LATER).
        public static let serviceUnavailable = Code(rawValue: "serviceUnavailable")
        /// The zone is busy with other work; wait and retry (TRY_AGAIN_LATER about a zone).
        public static let zoneBusy = Code(rawValue: "zoneBusy")
        /// The request was sent but the connection failed or timed out before a response.
        public static let networkFailure = Code(rawValue: "networkFailure")
        /// The server could not be reached at all.
        public static let networkUnavailable = Code(rawValue: "networkUnavailable")
        /// Missing or invalid credentials (AUTHENTICATION_FAILED, AUTHENTICATION_REQUIRED).
        public static let notAuthenticated = Code(rawValue: "notAuthenticated")
        /// The credentials don't allow this (ACCESS_DENIED).
        public static let permissionFailure = Code(rawValue: "permissionFailure")
        /// The user's storage quota is used up (QUOTA_EXCEEDED).
        public static let quotaExceeded = Code(rawValue: "quotaExceeded")
        /// The request carries too many items; split it (Nimbus: LIMIT_EXCEEDED).
        public static let limitExceeded = Code(rawValue: "limitExceeded")
        /// This item failed only because another item of the atomic batch failed (ATOMIC_ERROR).
        public static let batchRequestFailed = Code(rawValue: "batchRequestFailed")
        /// The request was malformed or a value was invalid (BAD_REQUEST).
        public static let invalidArguments = Code(rawValue: "invalidArguments")
        /// The server rejected the request for a reason the SDK does not know, or answered
        /// with something that is not a CloudKit Web Services response.
        public static let serverRejectedRequest = Code(rawValue: "serverRejectedRequest")
        /// The server failed internally (INTERNAL_ERROR).
        public static let internalError = Code(rawValue: "internalError")
        /// A VALIDATE reference points at a record that does not exist (VALIDATING_REFERENCE_ERROR).
        public static let referenceViolation = Code(rawValue: "referenceViolation")
        /// The operation or task was cancelled.
        public static let operationCancelled = Code(rawValue: "operationCancelled")
        /// An asset's local file does not exist or cannot be read; nothing was saved.
        public static let assetFileNotFound = Code(rawValue: "assetFileNotFound")
        /// An asset's local file changed while it was uploaded, or a download's bytes do not
        /// match the server's checksum; save (or download) again.
        public static let assetFileModified = Code(rawValue: "assetFileModified")
        /// The server no longer holds the asset's bytes, or its download URL expired: fetch
        /// the record again for a fresh one.
        public static let assetNotAvailable = Code(rawValue: "assetNotAvailable")
        /// An encrypted value or file did not open on this device: it was altered, cut short,
        /// moved to another field or record, or sealed with a key this device does not hold
        /// as that key. Nothing was decrypted; the server's copy is untouched (docs/ENCRYPTION.md).
        public static let decryptionFailed = Code(rawValue: "decryptionFailed")
        /// This device lacks the keys to seal or open encrypted fields: enrol it through a
        /// device that has them (a short code) or with the recovery key
        /// (``EncryptionKeys``); without either, the encrypted data cannot be read.
        public static let encryptionKeysMissing = Code(rawValue: "encryptionKeysMissing")

        /// Every code this version of the SDK produces.
        public static let allKnown: [Code] = [
            .partialFailure, .serverRecordChanged, .changeTokenExpired, .zoneNotFound, .unknownItem,
            .requestRateLimited, .serviceUnavailable, .zoneBusy, .networkFailure, .networkUnavailable,
            .notAuthenticated, .permissionFailure, .quotaExceeded, .limitExceeded, .batchRequestFailed,
            .invalidArguments, .serverRejectedRequest, .internalError, .referenceViolation, .operationCancelled,
            .assetFileNotFound, .assetFileModified, .assetNotAvailable, .decryptionFailed, .encryptionKeysMissing,
        ]

        /// Whether a request that failed with this code may succeed if sent again later.
        public var isRetryable: Bool {
            switch self {
            case .requestRateLimited, .serviceUnavailable, .zoneBusy, .networkFailure, .networkUnavailable:
                return true
            default:
                return false
            }
        }
    }
}
